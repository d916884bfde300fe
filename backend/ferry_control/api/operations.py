"""Operations of a cluster (read side)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.schemas.common import error_responses
from ferry_control.schemas.operation import OperationRead
from ferry_control.services.operations import OperationService

router = APIRouter(
    prefix="/clusters/{cluster_id}/operations", tags=["operations"], responses=error_responses(401, 404, 422)
)


@router.get("", response_model=list[OperationRead], summary="List operations, newest first")
async def list_operations(
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1),
    limit: int = Query(50, ge=1, le=500),
    before_id: int | None = Query(None, ge=1, description="Page back: operations with a smaller id."),
) -> list[OperationRead]:
    return [OperationRead.model_validate(o) for o in await OperationService(session).list(cluster_id, limit, before_id)]


@router.get("/{operation_id}", response_model=OperationRead, summary="Get an operation and its steps")
async def get_operation(
    session: SessionDep, _: CurrentToken, cluster_id: int = Path(ge=1), operation_id: int = Path(ge=1)
) -> OperationRead:
    return OperationRead.model_validate(await OperationService(session).get(cluster_id, operation_id))
