"""Replication links."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import ReplicationLink
from ferry_control.repositories.chunks import chunked


class LinkRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def list_all(self) -> Sequence[ReplicationLink]:
        return (await self.session.scalars(select(ReplicationLink))).all()

    async def list_for_cluster(self, cluster_id: int) -> Sequence[ReplicationLink]:
        statement = select(ReplicationLink).where(ReplicationLink.cluster_id == cluster_id).order_by(ReplicationLink.id)
        return (await self.session.scalars(statement)).all()

    async def list_for_clusters(self, cluster_ids: Collection[int]) -> dict[int, list[ReplicationLink]]:
        """The links of each of `cluster_ids` (a cluster without links maps to an empty list), in a few queries."""
        found: dict[int, list[ReplicationLink]] = {cluster_id: [] for cluster_id in cluster_ids}
        for chunk in chunked(sorted(found)):
            statement = (
                select(ReplicationLink)
                .where(ReplicationLink.cluster_id.in_(chunk))
                .order_by(ReplicationLink.cluster_id, ReplicationLink.id)
            )
            for link in (await self.session.scalars(statement)).all():
                found[link.cluster_id].append(link)
        return found

    async def list_for_replicas(self, replica_server_ids: Sequence[int]) -> Sequence[ReplicationLink]:
        if not replica_server_ids:
            return []
        statement = select(ReplicationLink).where(ReplicationLink.replica_server_id.in_(replica_server_ids))
        return (await self.session.scalars(statement.order_by(ReplicationLink.id))).all()

    async def record_stopped(self, cluster_id: int, replica_server_id: int, master_server_id: int) -> None:
        """The replica's connections to that master recorded as stopped (one UPDATE; the session's copies untouched)."""
        await self.session.execute(
            update(ReplicationLink)
            .where(ReplicationLink.cluster_id == cluster_id, ReplicationLink.replica_server_id == replica_server_id,
                   ReplicationLink.master_server_id == master_server_id)
            .values(running=False)
            .execution_options(synchronize_session=False)
        )  # fmt: skip

    async def add(self, link: ReplicationLink) -> ReplicationLink:
        self.session.add(link)
        await self.session.flush()
        return link

    async def delete(self, link: ReplicationLink) -> None:
        await self.session.delete(link)
