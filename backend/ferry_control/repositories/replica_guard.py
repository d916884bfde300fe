"""The replica guard's rows (models/replica_guard.py) and the read-only flag it records on a server it set."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import ReplicaGuard, Server
from ferry_control.repositories.chunks import chunked


class ReplicaGuardRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def for_clusters(self, cluster_ids: Collection[int]) -> dict[int, ReplicaGuard]:
        """By server id, the rows of every server of `cluster_ids` that has one."""
        found: dict[int, ReplicaGuard] = {}
        for chunk in chunked(sorted(set(cluster_ids))):
            statement = select(ReplicaGuard).where(ReplicaGuard.cluster_id.in_(chunk))
            for row in (await self.session.scalars(statement)).all():
                found[row.server_id] = row
        return found

    async def get(self, server_id: int) -> ReplicaGuard | None:
        return await self.session.get(ReplicaGuard, server_id)

    async def get_or_add(self, cluster_id: int, server_id: int) -> ReplicaGuard:
        row = await self.get(server_id)
        if row is None:
            row = ReplicaGuard(server_id=server_id, cluster_id=cluster_id, writable_domains=[], errant=[])
            self.session.add(row)
            await self.session.flush()
        return row

    async def flush(self) -> None:
        await self.session.flush()

    async def record_read_only(self, cluster_id: int, server_id: int, at: datetime) -> None:
        """The server is read-only as of `at` (an older poll does not undo it; see Server.read_only_set_at)."""
        await self.session.execute(
            update(Server)
            .where(Server.id == server_id, Server.cluster_id == cluster_id)
            .values(read_only=True, read_only_set_at=at)
            .execution_options(synchronize_session=False)
        )
