"""What a proxy's health check asks of a server: is it the writable master of its cluster, or a replica within the
lag limit — answered from what the control plane knows, not by asking the server: the collector's last observation
(health, read-only flag, replication links and their lag per domain) and what an operation in progress changed
itself (services/orchestrator/routing.py records a master's read-only before it sets it, and a promoted server's
writability right after, so a server being demoted fails the writer check from that moment, and a new master
passes it at once). Cheap enough for a check every 250 ms from several proxies: two indexed reads."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.naming import unknown_server
from ferry_control.models import HealthState, LinkSource, Server
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.servers import ServerRepository


@dataclass(frozen=True)
class RoleAnswer:
    ok: bool
    server_id: int
    role: str
    reason: str


class RoleService:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def _server(self, server_id: int) -> Server | None:
        return await ServerRepository(self.session).get_any(server_id)

    async def writer(self, server_id: int) -> RoleAnswer:
        """The writable master: answers, writable, not fenced, and replicating from no server of its cluster."""
        server = await self._server(server_id)
        if server is None:
            return RoleAnswer(False, server_id, "writer", f"{unknown_server(server_id)} is not registered")
        if problem := _unusable(server):
            return RoleAnswer(False, server_id, "writer", problem)
        if server.read_only is not False:
            return RoleAnswer(False, server_id, "writer", f"{server.label} is read-only")
        links = await LinkRepository(self.session).list_for_cluster(server.cluster_id)
        upstream = [
            link for link in links
            if link.replica_server_id == server.id and link.source == LinkSource.replica and link.running
            and link.master_server_id is not None
        ]  # fmt: skip
        if upstream:
            return RoleAnswer(
                False, server_id, "writer", f"{server.label} replicates from another server of its cluster"
            )
        return RoleAnswer(True, server_id, "writer", f"{server.label} is the writable master")

    async def reader(self, server_id: int, max_lag_s: float) -> RoleAnswer:
        """A replica that answers, replicates (every connection running) and lags at most `max_lag_s` seconds in
        every domain."""
        server = await self._server(server_id)
        if server is None:
            return RoleAnswer(False, server_id, "reader", f"{unknown_server(server_id)} is not registered")
        if problem := _unusable(server):
            return RoleAnswer(False, server_id, "reader", problem)
        links = [
            link for link in await LinkRepository(self.session).list_for_cluster(server.cluster_id)
            if link.replica_server_id == server.id and link.source == LinkSource.replica
        ]  # fmt: skip
        if not links:
            return RoleAnswer(False, server_id, "reader", f"{server.label} replicates from no server")
        for link in links:
            if not link.running:
                return RoleAnswer(False, server_id, "reader", f"{server.label}'s connection {link.name!r} is stopped")
            for domain, lag in (link.lag or {}).items():
                seconds = float(lag.get("seconds") or 0.0) if isinstance(lag, dict) else 0.0
                if seconds > max_lag_s:
                    return RoleAnswer(
                        False, server_id, "reader",
                        f"{server.label} lags {seconds:.1f} s in domain {domain} (at most {max_lag_s:g} s)",
                    )  # fmt: skip
        return RoleAnswer(True, server_id, "reader", f"{server.label} replicates within {max_lag_s:g} s")


def _unusable(server: Server) -> str | None:
    if server.fenced:
        return f"{server.label} is fenced (a master replaced by a failover)"
    if server.health != HealthState.healthy:
        return f"{server.label} is {server.health.value}"
    return None
