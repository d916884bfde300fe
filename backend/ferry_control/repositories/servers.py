"""Servers and their health transitions."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from ferry_control.models import HealthEvent, Server
from ferry_control.repositories.chunks import chunked


class ServerRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def list_for_cluster(self, cluster_id: int) -> Sequence[Server]:
        statement = select(Server).where(Server.cluster_id == cluster_id).order_by(Server.id)
        return (await self.session.scalars(statement)).all()

    async def list_for_clusters(
        self, cluster_ids: Collection[int], *, with_cluster: bool = False
    ) -> dict[int, list[Server]]:
        """The servers of each of `cluster_ids` (a cluster without servers maps to an empty list), in a few queries
        however many clusters (the collector's and failover monitor's cycle); `with_cluster`: each with its cluster
        loaded."""
        found: dict[int, list[Server]] = {cluster_id: [] for cluster_id in cluster_ids}
        for chunk in chunked(sorted(found)):
            statement = select(Server).where(Server.cluster_id.in_(chunk)).order_by(Server.cluster_id, Server.id)
            if with_cluster:
                statement = statement.options(selectinload(Server.cluster))
            for server in (await self.session.scalars(statement)).all():
                found[server.cluster_id].append(server)
        return found

    async def list_all_with_cluster(self) -> Sequence[Server]:
        """Every server of every cluster, with its cluster loaded (the collector's work list)."""
        statement = select(Server).options(selectinload(Server.cluster)).order_by(Server.cluster_id, Server.id)
        return (await self.session.scalars(statement)).all()

    async def by_ids_with_cluster(self, ids: Collection[int]) -> dict[int, Server]:
        """The servers of `ids` that exist, by id, each with its cluster loaded."""
        found: dict[int, Server] = {}
        for chunk in chunked(sorted(set(ids))):
            statement = select(Server).where(Server.id.in_(chunk)).options(selectinload(Server.cluster))
            found.update((server.id, server) for server in (await self.session.scalars(statement)).all())
        return found

    async def get_any(self, server_id: int) -> Server | None:
        """By id alone, whatever its cluster."""
        return await self.session.get(Server, server_id)

    async def get(self, cluster_id: int, server_id: int) -> Server | None:
        server = await self.session.get(Server, server_id)
        return server if server is not None and server.cluster_id == cluster_id else None

    async def find_by_protocol_address(self, cluster_id: int, host: str, port: int) -> Server | None:
        statement = select(Server).where(
            Server.cluster_id == cluster_id, Server.host == host, Server.protocol_port == port
        )
        return await self.session.scalar(statement)

    async def find_by_name(self, cluster_id: int, name: str) -> Server | None:
        return await self.session.scalar(select(Server).where(Server.cluster_id == cluster_id, Server.name == name))

    async def find_by_reported_server_id(self, cluster_id: int, reported_server_id: int) -> Server | None:
        statement = (
            select(Server)
            .where(Server.cluster_id == cluster_id, Server.reported_server_id == reported_server_id)
            .order_by(Server.id)
            .limit(1)
        )
        return await self.session.scalar(statement)

    async def add(self, server: Server) -> Server:
        self.session.add(server)
        await self.session.flush()
        return server

    async def delete(self, server: Server) -> None:
        await self.session.delete(server)
        await self.session.flush()

    async def flush(self) -> None:
        await self.session.flush()

    async def refresh(self, server: Server) -> None:
        """Reads the server's row again (its attributes after a savepoint was rolled back)."""
        await self.session.refresh(server)

    def add_health_event(self, event: HealthEvent) -> None:
        self.session.add(event)

    async def record_read_only(self, cluster_id: int, server_id: int, read_only: bool, at: datetime) -> None:
        """The server's read-only flag as an operation just set it (one UPDATE; the session's copies untouched)."""
        await self.session.execute(
            update(Server)
            .where(Server.id == server_id, Server.cluster_id == cluster_id)
            .values(read_only=read_only, read_only_set_at=at)
            .execution_options(synchronize_session=False)
        )

    async def maintenances_expired(self, now: datetime, cluster_ids: Collection[int] | None = None) -> Sequence[Server]:
        """The servers whose maintenance is set with an end at or before `now` (of `cluster_ids`; None: every
        cluster)."""
        statement = select(Server).where(
            Server.maintenance_set.is_(True), Server.maintenance_until.is_not(None), Server.maintenance_until <= now
        )
        if cluster_ids is not None:
            statement = statement.where(Server.cluster_id.in_(cluster_ids))
        return (await self.session.scalars(statement)).all()

    async def end_maintenance_if_until(self, server_id: int, until: datetime) -> bool:
        """Clears the server's maintenance if it is still set with that end — one conditional UPDATE, so one an
        operator started again meanwhile is left alone; True when it was cleared."""
        cleared = await self.session.execute(
            update(Server)
            .where(Server.id == server_id, Server.maintenance_set.is_(True), Server.maintenance_until == until)
            .values(maintenance_set=False, maintenance_owner=None, maintenance_reason=None,
                    maintenance_since=None, maintenance_until=None)
            .execution_options(synchronize_session=False)
        )  # fmt: skip
        return cast(CursorResult[Any], cleared).rowcount == 1
