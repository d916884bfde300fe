"""The audit log."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import AuditEntry, Operation, Server


class AuditRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def add(self, entry: AuditEntry) -> AuditEntry:
        self.session.add(entry)
        await self.session.flush()
        return entry

    async def list(
        self,
        limit: int,
        before_id: int | None = None,
        cluster_id: int | None = None,
        actor: str | None = None,
        outcome: str | None = None,
        since: datetime | None = None,
        *,
        action: str | None = None,
        server_id: int | None = None,
        until: datetime | None = None,
    ) -> Sequence[AuditEntry]:
        """Newest first; each filter given narrows it (`since` and `until` inclusive)."""
        statement = select(AuditEntry)
        if since is not None:
            statement = statement.where(AuditEntry.at >= since)
        if until is not None:
            statement = statement.where(AuditEntry.at <= until)
        if before_id is not None:
            statement = statement.where(AuditEntry.id < before_id)
        if cluster_id is not None:
            statement = statement.where(AuditEntry.cluster_id == cluster_id)
        if server_id is not None:
            statement = statement.where(AuditEntry.server_id == server_id)
        if actor is not None:
            statement = statement.where(AuditEntry.actor == actor)
        if action is not None:
            statement = statement.where(AuditEntry.action == action)
        if outcome is not None:
            statement = statement.where(AuditEntry.outcome == outcome)
        return (await self.session.scalars(statement.order_by(AuditEntry.id.desc()).limit(limit))).all()

    async def operations(self, ids: Collection[int]) -> dict[int, Operation]:
        """The operations audit rows started, by id (those that still exist)."""
        if not ids:
            return {}
        return {o.id: o for o in await self.session.scalars(select(Operation).where(Operation.id.in_(ids)))}

    async def servers(self, cluster_ids: Collection[int]) -> dict[int, Server]:
        """The servers of these clusters, by id (to name an operation's old and new master)."""
        if not cluster_ids:
            return {}
        return {s.id: s for s in await self.session.scalars(select(Server).where(Server.cluster_id.in_(cluster_ids)))}
