"""Clusters and their operation lock rows."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import Cluster, OperationLock
from ferry_control.repositories.chunks import chunked


class ClusterRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def ids(self) -> Sequence[int]:
        return (await self.session.scalars(select(Cluster.id).order_by(Cluster.id))).all()

    async def list(self) -> Sequence[Cluster]:
        return (await self.session.scalars(select(Cluster).order_by(Cluster.id))).all()

    async def get(self, cluster_id: int) -> Cluster | None:
        return await self.session.get(Cluster, cluster_id)

    async def get_by_name(self, name: str) -> Cluster | None:
        return await self.session.scalar(select(Cluster).where(Cluster.name == name))

    async def add(self, cluster: Cluster) -> Cluster:
        """Inserts the cluster and its (free) operation lock row."""
        self.session.add(cluster)
        await self.session.flush()
        self.session.add(OperationLock(cluster_id=cluster.id))
        await self.session.flush()
        return cluster

    async def delete(self, cluster: Cluster) -> None:
        await self.session.delete(cluster)
        await self.session.flush()

    async def hold(self, cluster_ids: Collection[int]) -> set[int]:
        """Which of `cluster_ids` still exist, their rows held against deletion for the rest of the transaction
        (SELECT … FOR KEY SHARE, in id order; SQLite, one writer at a time, takes no row lock). A unit of work that
        writes several rows of a cluster (its servers, links, samples, guard rows) holds the cluster first, as
        deleting a cluster locks the cluster's row before its cascade reaches any of those: a delete then waits
        for the writer to commit, or the writer, having waited for the delete, finds the cluster gone — never the
        two waiting on each other (a deadlock, which PostgreSQL ends by failing one of them)."""
        held: set[int] = set()
        for chunk in chunked(sorted(set(cluster_ids))):
            statement = (
                select(Cluster.id).where(Cluster.id.in_(chunk)).order_by(Cluster.id)
                .with_for_update(read=True, key_share=True)
            )  # fmt: skip
            held.update((await self.session.scalars(statement)).all())
        return held

    async def exclude_writers(self, cluster_id: int) -> None:
        """The cluster's row locked FOR UPDATE for the rest of the transaction, as deleting the cluster would lock
        it: before removing one of its servers, whose cascade reaches the server's links, samples and guard row. The
        writers of those rows `hold` the cluster first (FOR KEY SHARE, which this waits on and makes wait), so a
        removal waits for a record under way, and a record that comes after it reads the server gone — never the two
        waiting on each other. SQLite, one writer at a time, takes no row lock."""
        await self.session.execute(select(Cluster.id).where(Cluster.id == cluster_id).with_for_update())

    async def flush(self) -> None:
        await self.session.flush()

    async def lock_for_operation(self, cluster_id: int, *, nowait: bool = False) -> OperationLock | None:
        """Locks the cluster's operation row for the rest of the transaction: SELECT … FOR UPDATE on PostgreSQL
        (another API instance asking for it waits, or fails at once with `nowait`). SQLite has no row locks and
        ignores FOR UPDATE; there a no-op UPDATE of the row first takes the database-wide write lock, held until the
        transaction ends (others wait up to the busy timeout) — the best SQLite offers."""
        if self.session.get_bind().dialect.name == "sqlite":
            await self.session.execute(
                update(OperationLock)
                .where(OperationLock.cluster_id == cluster_id)
                .values(acquired_at=OperationLock.acquired_at)
            )
        statement = select(OperationLock).where(OperationLock.cluster_id == cluster_id)
        statement = statement.with_for_update(nowait=nowait)
        return await self.session.scalar(statement.execution_options(populate_existing=True))

    async def renew_lease(
        self, cluster_id: int, operation_id: int, until: datetime, fencing_token: int | None = None
    ) -> bool:
        """Extends the lease of the operation holding the cluster (with this fencing token, when given); False when
        it no longer holds it."""
        statement = update(OperationLock).where(
            OperationLock.cluster_id == cluster_id, OperationLock.operation_id == operation_id
        )
        if fencing_token is not None:
            statement = statement.where(OperationLock.fencing_token == fencing_token)
        result = await self.session.execute(statement.values(lease_expires_at=until))
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def lock_state(self, cluster_id: int) -> OperationLock | None:
        """The cluster's operation lock row as it is now (no lock taken)."""
        statement = select(OperationLock).where(OperationLock.cluster_id == cluster_id)
        return await self.session.scalar(statement.execution_options(populate_existing=True))

    async def release(self, cluster_id: int, operation_id: int, fencing_token: int | None = None) -> bool:
        """Frees the cluster if this operation holds it (with this fencing token, when given: a reconcile that took
        the cluster for the same operation keeps it)."""
        statement = update(OperationLock).where(
            OperationLock.cluster_id == cluster_id, OperationLock.operation_id == operation_id
        )
        if fencing_token is not None:
            statement = statement.where(OperationLock.fencing_token == fencing_token)
        result = await self.session.execute(
            statement.values(operation_id=None, acquired_at=None, lease_expires_at=None)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]
