"""GET /clusters/{id}/interleavings: recent transactions of every server, aligned by GTID."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query

from ferry_control.api.deps import CurrentToken, DriversDep, SessionDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.interleavings import Interleavings
from ferry_control.services.interleavings import InterleavingService

router = APIRouter(tags=["interleavings"], responses=error_responses(401, 404, 422))


@router.get("/clusters/{cluster_id}/interleavings", response_model=Interleavings, summary="Stream interleavings")
async def get_interleavings(
    session: SessionDep,
    drivers: DriversDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
    limit: int = Query(50, ge=1, le=1000, description="Recent transactions asked of each server."),
    domain: int | None = Query(None, ge=0, description="Only this domain."),
) -> Interleavings:
    return await InterleavingService(session, drivers).recent(cluster_id, limit, domain)
