"""The reads behind the stored-state gauges of /metrics: every server with its cluster, every link, operations
not ended per cluster, the replica guard's rows, and each cluster's newest drill run with an outcome."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import selectinload

from ferry_control.models import DrillRun, Operation, OperationState, ReplicaGuard, ReplicationLink, Server


class MetricsExportRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def servers(self) -> Sequence[Server]:
        statement = select(Server).options(selectinload(Server.cluster)).order_by(Server.cluster_id, Server.id)
        return (await self.session.scalars(statement)).all()

    async def links(self) -> Sequence[ReplicationLink]:
        return (await self.session.scalars(select(ReplicationLink).order_by(ReplicationLink.id))).all()

    async def guards(self) -> Sequence[ReplicaGuard]:
        """The replica guard's rows (writable domains, errant transactions)."""
        return (await self.session.scalars(select(ReplicaGuard))).all()

    async def unfinished_operations(self) -> dict[int, int]:
        """Per cluster id, how many operations are pending or running (clusters with none are left out)."""
        statement = (
            select(Operation.cluster_id, func.count())
            .where(Operation.state.in_((OperationState.pending, OperationState.running)))
            .group_by(Operation.cluster_id)
        )
        return {cluster_id: count for cluster_id, count in (await self.session.execute(statement)).all()}

    async def last_drills(self) -> Sequence[DrillRun]:
        """Each cluster's newest drill run that has an outcome (passed or failed)."""
        newest = (
            select(func.max(DrillRun.id))
            .where(DrillRun.state.in_(("passed", "failed")))
            .group_by(DrillRun.cluster_id)
            .scalar_subquery()
        )
        return (await self.session.scalars(select(DrillRun).where(DrillRun.id.in_(newest)))).all()
