"""The audit log."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import AuditEntry


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
    ) -> Sequence[AuditEntry]:
        statement = select(AuditEntry)
        if since is not None:
            statement = statement.where(AuditEntry.at >= since)
        if before_id is not None:
            statement = statement.where(AuditEntry.id < before_id)
        if cluster_id is not None:
            statement = statement.where(AuditEntry.cluster_id == cluster_id)
        if actor is not None:
            statement = statement.where(AuditEntry.actor == actor)
        if outcome is not None:
            statement = statement.where(AuditEntry.outcome == outcome)
        return (await self.session.scalars(statement.order_by(AuditEntry.id.desc()).limit(limit))).all()
