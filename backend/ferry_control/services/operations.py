"""Operations, read side: the list of a cluster's operations and one operation with its steps. (Starting
operations arrives with the orchestrator.)"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import NotFound
from ferry_control.models import Operation
from ferry_control.repositories.operations import OperationRepository
from ferry_control.services.clusters import ClusterService


class OperationService:
    def __init__(self, session: AsyncSession):
        self.clusters = ClusterService(session)
        self.operations = OperationRepository(session)

    async def list(self, cluster_id: int, limit: int, before_id: int | None = None) -> Sequence[Operation]:
        await self.clusters.get(cluster_id)
        return await self.operations.list_for_cluster(cluster_id, limit, before_id)

    async def get(self, cluster_id: int, operation_id: int) -> Operation:
        await self.clusters.get(cluster_id)
        operation = await self.operations.get(cluster_id, operation_id)
        if operation is None:
            raise NotFound(
                f"operation {operation_id} does not exist in cluster {cluster_id}", code="operation_not_found"
            )
        return operation
