"""GET /clusters/{id}/interleavings: recent transactions of every server, aligned by GTID."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request

from ferry_control.api.deps import DriversDep, ExpensiveReadToken, SessionDep, SettingsDep
from ferry_control.core.errors import Unprocessable
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.interleavings import Interleavings
from ferry_control.services.interleavings import InterleavingService

router = APIRouter(tags=["interleavings"], responses=error_responses(401, 404, 422))


@router.get(
    "/clusters/{cluster_id}/interleavings",
    response_model=Interleavings,
    summary="Stream interleavings",
    description="Reads every server's recent binlog events: `limit` is capped by the interleavings_events_max "
    "setting (422 beyond); each token may ask expensive_reads_per_min times a minute, and have "
    "heavy_reads_per_token_max in progress at once, an instance heavy_reads_max (429 beyond); each server's part is "
    "bounded by heavy_read_timeout_s (then that server's error).",
    responses=error_responses(429),
)
async def get_interleavings(
    request: Request,
    session: SessionDep,
    drivers: DriversDep,
    settings: SettingsDep,
    principal: ExpensiveReadToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
    limit: int = Query(50, ge=1, le=1000, description="Recent transactions asked of each server."),
    domain: int | None = Query(None, ge=0, le=4294967295, description="Only this domain."),
) -> Interleavings:
    if limit > settings.interleavings_events_max:
        raise Unprocessable(
            f"limit: at most {settings.interleavings_events_max} transactions per server (interleavings_events_max)",
            code="limit_too_large",
        )
    with request.app.state.heavy_reads.held(principal.token_id, "interleavings reads"):
        return await InterleavingService(session, drivers, settings.heavy_read_timeout_s).recent(
            cluster_id, limit, domain
        )
