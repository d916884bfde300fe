"""Making a replicating server writable for its own domains (an admin's decision, recorded beside the server for
the replica guard), and reading what is set."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import NotFound
from ferry_control.repositories.replica_guard import ReplicaGuardRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.replica_guard import WritableDomainsRead


class WritableDomainsService:
    def __init__(self, session: AsyncSession):
        self.servers = ServerRepository(session)
        self.guards = ReplicaGuardRepository(session)

    async def _server_exists(self, cluster_id: int, server_id: int) -> None:
        if await self.servers.get(cluster_id, server_id) is None:
            raise NotFound(f"server {server_id} of cluster {cluster_id} does not exist", code="server_not_found")

    async def get(self, cluster_id: int, server_id: int) -> WritableDomainsRead:
        await self._server_exists(cluster_id, server_id)
        row = await self.guards.get(server_id)
        if row is None:
            return WritableDomainsRead(registered_server_id=server_id, writable_domains=[], set_by=None, set_at=None)
        return WritableDomainsRead(
            registered_server_id=server_id, writable_domains=[int(d) for d in row.writable_domains],
            set_by=row.writable_set_by, set_at=row.writable_set_at,
        )  # fmt: skip

    async def set(self, cluster_id: int, server_id: int, domains: list[int], by: str) -> WritableDomainsRead:
        await self._server_exists(cluster_id, server_id)
        row = await self.guards.get_or_add(cluster_id, server_id)
        row.writable_domains = list(domains)
        row.writable_set_by = by[:100]
        row.writable_set_at = datetime.now(UTC)
        await self.guards.flush()
        return await self.get(cluster_id, server_id)
