"""Positions matrix, position history and lag history of a cluster."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Path, Query

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.api.renamed_query import refuse_old_names
from ferry_control.schemas.common import ID_MAX, GtidPositionText, error_responses
from ferry_control.schemas.positions import LagHistory, PositionHistory, PositionMatrix
from ferry_control.services.positions import PositionService

router = APIRouter(prefix="/clusters/{cluster_id}", tags=["positions"], responses=error_responses(400, 401, 404, 422))

ClusterId = Path(ge=1, le=ID_MAX, description="The cluster's id.")
#: Most samples one history answer holds.
HISTORY_LIMIT_MAX = 10_000


@router.get("/positions", response_model=PositionMatrix, summary="Servers × domains position matrix")
async def get_positions(
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = ClusterId,
    reached: GtidPositionText | None = Query(
        None, description="Also tell, per server, whether it has reached this GTID position."
    ),
) -> PositionMatrix:
    return await PositionService(session).matrix(cluster_id, reached)


@router.get(
    "/positions/history",
    response_model=PositionHistory,
    summary="Position samples in a time range",
    dependencies=[Depends(refuse_old_names)],
)
async def get_position_history(
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = ClusterId,
    since: datetime | None = Query(None, description="Start (inclusive); default: an hour before `until`."),
    until: datetime | None = Query(None, description="End (inclusive); default: now."),
    registered_server_id: int | None = Query(
        None, ge=1, le=ID_MAX, description="Only this registered server (the control plane's id)."
    ),
    domain: int | None = Query(None, ge=0, description="Only this domain."),
    limit: int = Query(1000, ge=1, le=HISTORY_LIMIT_MAX),
) -> PositionHistory:
    return await PositionService(session).position_history(
        cluster_id, since, until, limit, registered_server_id, domain
    )


@router.get(
    "/lag/history",
    response_model=LagHistory,
    summary="Lag samples in a time range",
    dependencies=[Depends(refuse_old_names)],
)
async def get_lag_history(
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = ClusterId,
    since: datetime | None = Query(None, description="Start (inclusive); default: an hour before `until`."),
    until: datetime | None = Query(None, description="End (inclusive); default: now."),
    replica_registered_server_id: int | None = Query(
        None, ge=1, le=ID_MAX, description="Only links of this replica (its registered id)."
    ),
    domain: int | None = Query(None, ge=0, description="Only this domain."),
    limit: int = Query(1000, ge=1, le=HISTORY_LIMIT_MAX),
) -> LagHistory:
    return await PositionService(session).lag_history(
        cluster_id, since, until, limit, replica_registered_server_id, domain
    )
