"""Clusters CRUD, the overview of every cluster, and acknowledging a failover (which suspended automatic failover)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Response, status

from ferry_control.api.deps import CurrentToken, OperatorToken, SecretsDep, SessionDep, SettingsDep
from ferry_control.schemas.cluster import ClusterCreate, ClusterRead, ClusterUpdate
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.overview import ClusterOverview
from ferry_control.services.clusters import ClusterService
from ferry_control.services.overview import OverviewService

router = APIRouter(prefix="/clusters", tags=["clusters"], responses=error_responses(401, 422))

ClusterId = Path(description="The cluster's id.", ge=1, le=ID_MAX, examples=[1])


@router.get("", response_model=list[ClusterRead], summary="List clusters")
async def list_clusters(
    session: SessionDep, settings: SettingsDep, secrets: SecretsDep, principal: CurrentToken
) -> list[ClusterRead]:
    service = ClusterService(session, settings, secrets)
    return [service.present(c, principal.role) for c in await service.list()]


@router.post(
    "",
    response_model=ClusterRead,
    status_code=status.HTTP_201_CREATED,
    summary="Create a cluster",
    responses=error_responses(403, 409),
)
async def create_cluster(
    data: ClusterCreate, session: SessionDep, settings: SettingsDep, secrets: SecretsDep, principal: OperatorToken
) -> ClusterRead:
    service = ClusterService(session, settings, secrets)
    return service.present(await service.create(data, principal.role), principal.role)


@router.get(
    "/overview",
    response_model=list[ClusterOverview],
    summary="Every cluster with its health, masters, replicas, worst lag and last drill",
)
async def clusters_overview(
    session: SessionDep, settings: SettingsDep, secrets: SecretsDep, principal: CurrentToken
) -> list[ClusterOverview]:
    # Declared before /{cluster_id}: "overview" is not an id.
    return await OverviewService(session, settings, secrets).overview(principal.role)


@router.get("/{cluster_id}", response_model=ClusterRead, summary="Get a cluster", responses=error_responses(404))
async def get_cluster(
    session: SessionDep,
    settings: SettingsDep,
    secrets: SecretsDep,
    principal: CurrentToken,
    cluster_id: int = ClusterId,
) -> ClusterRead:
    service = ClusterService(session, settings, secrets)
    return service.present(await service.get(cluster_id), principal.role)


@router.patch(
    "/{cluster_id}", response_model=ClusterRead, summary="Update a cluster", responses=error_responses(403, 404, 409)
)
async def update_cluster(
    data: ClusterUpdate,
    session: SessionDep,
    settings: SettingsDep,
    secrets: SecretsDep,
    principal: OperatorToken,
    cluster_id: int = ClusterId,
) -> ClusterRead:
    service = ClusterService(session, settings, secrets)
    return service.present(await service.update(cluster_id, data, principal.role), principal.role)


@router.post(
    "/{cluster_id}/failover/acknowledge",
    response_model=ClusterRead,
    summary="Acknowledge the last failover: automatic failover may run again after the cool-down",
    responses=error_responses(403, 404, 409),
)
async def acknowledge_failover(
    session: SessionDep,
    settings: SettingsDep,
    secrets: SecretsDep,
    principal: OperatorToken,
    cluster_id: int = ClusterId,
) -> ClusterRead:
    service = ClusterService(session, settings, secrets)
    return service.present(await service.acknowledge_failover(cluster_id), principal.role)


@router.delete(
    "/{cluster_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Delete a cluster and everything recorded about it (409 `operation_running` while an operation runs)",
    responses=error_responses(403, 404, 409),
)
async def delete_cluster(session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId) -> Response:
    await ClusterService(session).delete(cluster_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
