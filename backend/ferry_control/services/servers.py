"""Servers within a cluster: register, read, update (including the maintenance flag), remove."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import Conflict, Forbidden, NotFound
from ferry_control.core.naming import unknown_server
from ferry_control.core.security import Role
from ferry_control.drivers.registry import credentials_follow_address
from ferry_control.models import Server
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.server import ServerCreate, ServerUpdate
from ferry_control.services.clusters import ClusterService


class ServerService:
    def __init__(self, session: AsyncSession):
        self.servers = ServerRepository(session)
        self.clusters = ClusterService(session)

    async def list(self, cluster_id: int) -> Sequence[Server]:
        await self.clusters.get(cluster_id)
        return await self.servers.list_for_cluster(cluster_id)

    async def get(self, cluster_id: int, server_id: int) -> Server:
        await self.clusters.get(cluster_id)
        server = await self.servers.get(cluster_id, server_id)
        if server is None:
            raise NotFound(
                f"{unknown_server(server_id)} does not exist in cluster {cluster_id}", code="server_not_found"
            )
        return server

    async def create(self, cluster_id: int, data: ServerCreate) -> Server:
        await self.clusters.get(cluster_id)
        name = data.name or (f"{data.host}:{data.protocol_port}" if data.protocol_port else data.host)
        await self._check_free(cluster_id, name, data.host, data.protocol_port)
        return await self.servers.add(Server(cluster_id=cluster_id, **{**data.model_dump(), "name": name}))

    async def update(self, cluster_id: int, server_id: int, data: ServerUpdate, role: Role = Role.admin) -> Server:
        """409 `operation_running` while an operation holds the cluster (it acts on what it read of the servers);
        403 `address_change_needs_admin` when `role` is below admin and the change moves a server's address while
        credentials go to it (its cluster's stored secrets, or the fleet's credentials for its kind): the control
        plane would send them to the new address."""
        server = await self.get(cluster_id, server_id)
        changes = data.model_dump(exclude_unset=True)
        await self.clusters.refuse_while_busy(cluster_id, f"{server.label} cannot be changed")
        moved = [
            k for k in ("host", "protocol_port", "admin_port") if k in changes and changes[k] != getattr(server, k)
        ]
        if moved and not role.allows(Role.admin):
            cluster = await self.clusters.get(cluster_id)
            if credentials_follow_address(server.kind, bool(cluster.credentials_ciphertext)):
                raise Forbidden(
                    f"changing the {', '.join(moved)} of {server.label} sends its cluster's "
                    "credentials to the new address: an admin's token is needed (or register the new address as "
                    "a new server and remove this one)",
                    code="address_change_needs_admin",
                )
        for required in ("name", "host", "labels", "maintenance", "promotion_rule"):
            if required in changes and changes[required] is None:
                raise Conflict(f"a server's {required} cannot be removed", code="field_required")
        name = changes.get("name", server.name)
        host = changes.get("host", server.host)
        port = changes.get("protocol_port", server.protocol_port)
        await self._check_free(cluster_id, name, host, port, ignore=server.id)
        for key, value in changes.items():
            setattr(server, key, value)
        await self.servers.flush()
        return server

    async def set_maintenance(self, cluster_id: int, server_id: int, maintenance: bool) -> Server:
        server = await self.get(cluster_id, server_id)
        server.maintenance = maintenance
        await self.servers.flush()
        return server

    async def unfence(self, cluster_id: int, server_id: int) -> Server:
        """The operator takes a fenced former master back into the cluster's care (it stays read-only)."""
        server = await self.get(cluster_id, server_id)
        if not server.fenced:
            raise Conflict(f"{server.label} is not fenced", code="not_fenced")
        server.fenced, server.fenced_at, server.fence_reason = False, None, None
        await self.servers.flush()
        return server

    async def delete(self, cluster_id: int, server_id: int) -> None:
        server = await self.get(cluster_id, server_id)
        await self.clusters.refuse_while_busy(cluster_id, f"{server.label} cannot be removed")
        await self.servers.delete(server)

    async def _check_free(
        self, cluster_id: int, name: str, host: str, port: int | None, ignore: int | None = None
    ) -> None:
        same_name = await self.servers.find_by_name(cluster_id, name)
        if same_name is not None and same_name.id != ignore:
            raise Conflict(
                f"{same_name.label} of cluster {cluster_id} is named {name!r} already", code="server_name_taken"
            )
        if port is not None:
            same_address = await self.servers.find_by_protocol_address(cluster_id, host, port)
            if same_address is not None and same_address.id != ignore:
                raise Conflict(
                    f"{same_address.label} of cluster {cluster_id} has the address {host}:{port} already",
                    code="server_address_taken",
                )
