"""Clusters: create, read, update, delete."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import Conflict, NotFound
from ferry_control.models import Cluster
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.schemas.cluster import ClusterCreate, ClusterUpdate


class ClusterService:
    def __init__(self, session: AsyncSession):
        self.clusters = ClusterRepository(session)

    async def list(self) -> Sequence[Cluster]:
        return await self.clusters.list()

    async def get(self, cluster_id: int) -> Cluster:
        cluster = await self.clusters.get(cluster_id)
        if cluster is None:
            raise NotFound(f"cluster {cluster_id} does not exist", code="cluster_not_found")
        return cluster

    async def create(self, data: ClusterCreate) -> Cluster:
        await self._name_free(data.name)
        return await self.clusters.add(Cluster(**data.model_dump()))

    async def update(self, cluster_id: int, data: ClusterUpdate) -> Cluster:
        cluster = await self.get(cluster_id)
        changes = data.model_dump(exclude_unset=True)
        for required in ("auto_failover", "pre_operation_webhooks", "post_operation_webhooks"):
            if required in changes and changes[required] is None:
                raise Conflict(f"a cluster's {required} cannot be removed; set it instead", code="field_required")
        if "name" in changes and changes["name"] != cluster.name:
            if changes["name"] is None:
                raise Conflict("a cluster's name cannot be removed", code="cluster_name_required")
            await self._name_free(changes["name"])
        for key, value in changes.items():
            setattr(cluster, key, value)
        await self.clusters.flush()
        return cluster

    async def acknowledge_failover(self, cluster_id: int) -> Cluster:
        """An operator has looked at the last failover: automatic failover may run again (after the cool-down)."""
        cluster = await self.get(cluster_id)
        if cluster.failover_suspended_at is None:
            raise Conflict(
                f"cluster {cluster_id} has no failover to acknowledge: automatic failover is not suspended",
                code="nothing_to_acknowledge",
            )
        cluster.failover_suspended_at = None
        await self.clusters.flush()
        return cluster

    async def delete(self, cluster_id: int) -> None:
        await self.clusters.delete(await self.get(cluster_id))

    async def _name_free(self, name: str) -> None:
        existing = await self.clusters.get_by_name(name)
        if existing is not None:
            raise Conflict(f"a cluster named {name!r} exists already (id {existing.id})", code="cluster_name_taken")
