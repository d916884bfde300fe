"""The audit trail: records one row per state-changing API call, and lists them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import AuditEntry
from ferry_control.repositories.audit import AuditRepository
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.servers import ServerRepository


def outcome_for_status(status_code: int) -> str:
    if status_code in (401, 403):
        return "denied"
    return "succeeded" if status_code < 400 else "failed"


#: The audit path column's length: a longer path (a zero-padded id, say) is cut, never refused.
PATH_MAX = 500


class AuditService:
    def __init__(self, session: AsyncSession):
        self.entries = AuditRepository(session)
        self.clusters = ClusterRepository(session)
        self.servers = ServerRepository(session)

    async def record(
        self,
        *,
        actor: str | None,
        token_id: int | None,
        action: str,
        method: str,
        path: str,
        cluster_id: int | None,
        status_code: int,
        details: dict[str, Any],
        outcome: str | None = None,
        server_id: int | None = None,
    ) -> AuditEntry:
        """`server_id`: the server of the call's path, if one; the row names it by its label as it is now (a later
        rename or a reused id does not change what the row says)."""
        if cluster_id is not None and server_id is not None:
            server = await self.servers.get(cluster_id, server_id)
            if server is not None:
                details = {**details, "server": server.label}
        return await self.entries.add(
            AuditEntry(
                actor=None if actor is None else actor[:100],
                token_id=token_id,
                action=action[:100],
                method=method[:10],
                path=path if len(path) <= PATH_MAX else f"{path[: PATH_MAX - 1]}…",
                cluster_id=cluster_id,
                outcome=outcome or outcome_for_status(status_code),
                status_code=status_code,
                details=details,
            )
        )

    async def list(
        self,
        limit: int,
        before_id: int | None = None,
        cluster_id: int | None = None,
        actor: str | None = None,
        outcome: str | None = None,
    ) -> Sequence[AuditEntry]:
        """Newest first. For a cluster: only what was recorded since it was created — on SQLite a deleted cluster's
        id can be given to a new one, whose history must not begin with the old one's."""
        since = None
        if cluster_id is not None:
            cluster = await self.clusters.get(cluster_id)
            since = None if cluster is None else cluster.created_at
        return await self.entries.list(limit, before_id, cluster_id, actor, outcome, since)
