"""Servers of a cluster: CRUD, the maintenance flag, and clearing a fence."""

from __future__ import annotations

from fastapi import APIRouter, Path, Response, status

from ferry_control.api.deps import CurrentToken, OperatorToken, SessionDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.server import MaintenanceUpdate, ServerCreate, ServerRead, ServerUpdate
from ferry_control.services.servers import ServerService

router = APIRouter(prefix="/clusters/{cluster_id}/servers", tags=["servers"], responses=error_responses(401, 404, 422))

ClusterId = Path(description="The cluster's id.", ge=1, le=ID_MAX, examples=[1])
ServerId = Path(description="The registered server's id.", ge=1, le=ID_MAX, examples=[3])


@router.get("", response_model=list[ServerRead], summary="List a cluster's servers")
async def list_servers(session: SessionDep, _: CurrentToken, cluster_id: int = ClusterId) -> list[ServerRead]:
    return [ServerRead.model_validate(s) for s in await ServerService(session).list(cluster_id)]


@router.post(
    "",
    response_model=ServerRead,
    status_code=status.HTTP_201_CREATED,
    summary="Register a server",
    responses=error_responses(403, 409),
)
async def create_server(
    data: ServerCreate, session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId
) -> ServerRead:
    return ServerRead.model_validate(await ServerService(session).create(cluster_id, data))


@router.get("/{server_id}", response_model=ServerRead, summary="Get a server")
async def get_server(
    session: SessionDep, _: CurrentToken, cluster_id: int = ClusterId, server_id: int = ServerId
) -> ServerRead:
    return ServerRead.model_validate(await ServerService(session).get(cluster_id, server_id))


@router.patch("/{server_id}", response_model=ServerRead, summary="Update a server", responses=error_responses(403, 409))
async def update_server(
    data: ServerUpdate,
    session: SessionDep,
    principal: OperatorToken,
    cluster_id: int = ClusterId,
    server_id: int = ServerId,
) -> ServerRead:
    """Refused while an operation runs on the cluster (409 `operation_running`); moving a server that receives
    credentials to another address takes an admin's token (403 `address_change_needs_admin`)."""
    return ServerRead.model_validate(await ServerService(session).update(cluster_id, server_id, data, principal.role))


@router.put(
    "/{server_id}/maintenance",
    response_model=ServerRead,
    summary="Set or clear the maintenance flag",
    responses=error_responses(403),
)
async def set_maintenance(
    data: MaintenanceUpdate,
    session: SessionDep,
    _: OperatorToken,
    cluster_id: int = ClusterId,
    server_id: int = ServerId,
) -> ServerRead:
    return ServerRead.model_validate(
        await ServerService(session).set_maintenance(cluster_id, server_id, data.maintenance)
    )


@router.post(
    "/{server_id}/unfence",
    response_model=ServerRead,
    summary="Clear a fenced former master's fence (it stays read-only; repointing it also clears the fence)",
    responses=error_responses(403, 409),
)
async def unfence_server(
    session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId, server_id: int = ServerId
) -> ServerRead:
    return ServerRead.model_validate(await ServerService(session).unfence(cluster_id, server_id))


@router.delete(
    "/{server_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Remove a server (and its samples and links); 409 `operation_running` while an operation runs",
    responses=error_responses(403, 409),
)
async def delete_server(
    session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId, server_id: int = ServerId
) -> Response:
    await ServerService(session).delete(cluster_id, server_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
