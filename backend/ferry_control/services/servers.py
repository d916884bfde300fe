"""Servers within a cluster: register, read, update, remove; start and end maintenance (an owner, a reason and an
end, checked here: a past end, or one beyond the longest maintenance, is refused with what was asked and what is
allowed)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import Conflict, Forbidden, NotFound, Unprocessable
from ferry_control.core.naming import unknown_server
from ferry_control.core.security import Role
from ferry_control.drivers.registry import credentials_follow_address
from ferry_control.models import HealthState, Server
from ferry_control.models.base import utcnow
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.server import (
    MAINTENANCE_MAX_S,
    MAINTENANCE_MIN_S,
    MaintenanceEnd,
    MaintenanceUpdate,
    ServerCreate,
    ServerUpdate,
)
from ferry_control.services.approval import Approver, TrustedHosts, approve_address
from ferry_control.services.clusters import ClusterService

#: The address fields of a server: a change of any of them needs an approval of the new address.
ADDRESS_FIELDS = ("host", "protocol_port", "admin_port")


class ServerService:
    def __init__(self, session: AsyncSession, trusted: TrustedHosts | None = None):
        self.servers = ServerRepository(session)
        self.clusters = ClusterService(session)
        #: Addresses an operator may give and have polled at once (`server_trusted_hosts`).
        self.trusted = trusted or TrustedHosts.of(())

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

    async def create(self, cluster_id: int, data: ServerCreate, by: Approver) -> Server:
        """`by`: the caller, recorded as who set the maintenance it is registered in (if any); its address is
        approved when `by` is an admin or the allow-list names the host, else the server is pending."""
        await self.clusters.get(cluster_id)
        name = data.name or (f"{data.host}:{data.protocol_port}" if data.protocol_port else data.host)
        await self._check_free(cluster_id, name, data.host, data.protocol_port)
        fields = data.model_dump(exclude={"maintenance"})
        server = Server(cluster_id=cluster_id, **{**fields, "name": name})
        approve_address(server, by, self.trusted)
        if data.maintenance is not None:
            start_maintenance(server, by.name, data.maintenance.reason, maintenance_end(data.maintenance))
        return await self.servers.add(server)

    async def update(self, cluster_id: int, server_id: int, data: ServerUpdate, by: Approver) -> Server:
        """409 `operation_running` while an operation holds the cluster (it acts on what it read of the servers);
        403 `address_change_needs_admin` when `by` is below admin and the change moves a server's address while
        credentials go to it (its cluster's stored secrets, or the fleet's credentials for its kind): the control
        plane would send them to the new address. Any other move is approved as a registration is (`create`)."""
        server = await self.get(cluster_id, server_id)
        changes = data.model_dump(exclude_unset=True)
        await self.clusters.refuse_while_busy(cluster_id, f"{server.label} cannot be changed")
        moved = [k for k in ADDRESS_FIELDS if k in changes and changes[k] != getattr(server, k)]
        role = by.role
        if moved and not role.allows(Role.admin):
            cluster = await self.clusters.get(cluster_id)
            if credentials_follow_address(server.kind, bool(cluster.credentials_ciphertext)):
                raise Forbidden(
                    f"changing the {', '.join(moved)} of {server.label} sends its cluster's "
                    "credentials to the new address: an admin's token is needed (or register the new address as "
                    "a new server and remove this one)",
                    code="address_change_needs_admin",
                )
        for required in ("name", "host", "labels", "promotion_rule"):
            if required in changes and changes[required] is None:
                raise Conflict(f"a server's {required} cannot be removed", code="field_required")
        name = changes.get("name", server.name)
        host = changes.get("host", server.host)
        port = changes.get("protocol_port", server.protocol_port)
        await self._check_free(cluster_id, name, host, port, ignore=server.id)
        for key, value in changes.items():
            setattr(server, key, value)
        if moved:
            approve_address(server, by, self.trusted)
            if not server.approved:  # not polled until approved: what was read at the old address says nothing
                server.health, server.consecutive_failures = HealthState.unknown, 0
        await self.servers.flush()
        return server

    async def approve(self, cluster_id: int, server_id: int, by: Approver) -> Server:
        """An admin lets the control plane connect to the server's address (and send it its cluster's credentials).
        Approving an approved server records the new approver."""
        server = await self.get(cluster_id, server_id)
        if not by.role.allows(Role.admin):
            raise Forbidden("approving a server's address takes an admin's token", code="forbidden")
        approve_address(server, by, self.trusted)
        await self.servers.flush()
        return server

    async def set_maintenance(self, cluster_id: int, server_id: int, data: MaintenanceUpdate, owner: str) -> Server:
        """Starts maintenance (a reason and an end are required; `owner` is the caller's token name) or ends it.
        Starting it again replaces the owner, reason and end. 409 `operation_running` while an operation holds the
        cluster: whether a server is in maintenance decides what the operation may do with it."""
        server = await self.get(cluster_id, server_id)
        await self.clusters.refuse_while_busy(cluster_id, f"the maintenance of {server.label} cannot be changed")
        if not data.maintenance:
            given = [k for k in ("reason", "duration_s", "until") if getattr(data, k) is not None]
            if given:
                raise Unprocessable(
                    f"{', '.join(given)} only go with maintenance: true (ending maintenance takes nothing else)",
                    code="maintenance_fields_unexpected",
                )
            end_maintenance(server)
        else:
            if data.reason is None or not data.reason.strip():
                raise Unprocessable(
                    f"putting {server.label} in maintenance takes a reason (say why, for whoever looks at it)",
                    code="maintenance_reason_required",
                )
            start_maintenance(server, owner, data.reason.strip(), maintenance_end(data))
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
        # In the order a cluster's delete takes them (the operation lock, then the cluster's row): the collector's
        # record, the replica guard and a discovery hold the cluster before writing its servers' rows, so the
        # removal's cascade never meets one of them half-way (a deadlock PostgreSQL would end by failing one).
        await self.clusters.exclude_writers(cluster_id)
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


def maintenance_end(start: MaintenanceEnd, now: datetime | None = None) -> datetime:
    """When a maintenance asked for at `now` ends: `duration_s` from now or `until`, exactly one, within
    MAINTENANCE_MIN_S to MAINTENANCE_MAX_S from now (422 with what was asked and what is allowed otherwise)."""
    now = now or utcnow()
    longest = f"{MAINTENANCE_MAX_S} s (7 days)"
    if (start.duration_s is None) == (start.until is None):
        raise Unprocessable(
            "a maintenance needs exactly one end: duration_s (seconds from now) or until (a time with its zone)"
            + ("; both were given" if start.duration_s is not None else ""),
            code="maintenance_end_required",
        )
    if start.duration_s is not None:
        if start.duration_s < MAINTENANCE_MIN_S:
            raise Unprocessable(
                f"duration_s {start.duration_s} is too short: a maintenance lasts at least {MAINTENANCE_MIN_S} s",
                code="maintenance_too_short",
            )
        if start.duration_s > MAINTENANCE_MAX_S:
            raise Unprocessable(
                f"duration_s {start.duration_s} is longer than the longest maintenance, {longest}",
                code="maintenance_too_long",
            )
        return now + timedelta(seconds=start.duration_s)
    until = start.until
    assert until is not None
    if until.tzinfo is None:
        raise Unprocessable(
            f"until {until.isoformat()} has no time zone: give one, e.g. {until.isoformat()}Z",
            code="maintenance_until_naive",
        )
    if until <= now:
        raise Unprocessable(
            f"until {until.isoformat()} is not in the future (it is now {now.isoformat(timespec='seconds')})",
            code="maintenance_until_past",
        )
    if until > now + timedelta(seconds=MAINTENANCE_MAX_S):
        latest = (now + timedelta(seconds=MAINTENANCE_MAX_S)).isoformat(timespec="seconds")
        raise Unprocessable(
            f"until {until.isoformat()} is beyond the longest maintenance, {longest}: at the latest {latest}",
            code="maintenance_too_long",
        )
    return until


def start_maintenance(server: Server, owner: str | None, reason: str, until: datetime) -> None:
    server.maintenance_set = True
    server.maintenance_owner = owner
    server.maintenance_reason = reason
    server.maintenance_since = utcnow()
    server.maintenance_until = until


def end_maintenance(server: Server) -> None:
    server.maintenance_set = False
    server.maintenance_owner = server.maintenance_reason = None
    server.maintenance_since = server.maintenance_until = None


def maintenance_audit(server: Server) -> dict[str, Any]:
    """What an audit row says of a server's maintenance after a change."""
    if not server.maintenance_set:
        return {"maintenance": False}
    return {
        "maintenance": True,
        "owner": server.maintenance_owner,
        "reason": server.maintenance_reason,
        "until": None if server.maintenance_until is None else server.maintenance_until.isoformat(),
    }
