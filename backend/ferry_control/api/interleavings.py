"""GET /clusters/{id}/interleavings: every server's transactions within a window, aligned by GTID."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request

from ferry_control.api.deps import DriversDep, ExpensiveReadToken, SessionDep, SettingsDep
from ferry_control.core.errors import Unprocessable
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.interleavings import Interleavings
from ferry_control.services.interleaving_window import COUNT, gtid_window
from ferry_control.services.interleavings import InterleavingService

router = APIRouter(tags=["interleavings"], responses=error_responses(401, 404, 422))


@router.get(
    "/clusters/{cluster_id}/interleavings",
    response_model=Interleavings,
    summary="Stream interleavings",
    description="Reads every server's binlog transactions within a window: the newest `limit` of each server "
    "(the default), the last `last_s` seconds of writes, or the GTID range `from`/`to` per domain (positions, e.g. "
    "`1-1-100,2-2-40`: only the domains they name) — `last_s` and `from`/`to` exclusive (422 window_conflict); "
    "malformed GTIDs are 422 bad_gtid naming the column, a domain whose `from` is after its `to` 422 bad_range. "
    "`limit` (at most the interleavings_events_max setting, 422 beyond) bounds each server's part of a window "
    "(its default then); each token may ask expensive_reads_per_min times a minute, and have "
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
    limit: int | None = Query(
        None,
        ge=1,
        le=1000,
        description="Transactions per server: the newest this many (50 unless given), or at "
        "most this many within a window (interleavings_events_max unless given).",
    ),
    domain: int | None = Query(None, ge=0, le=4294967295, description="Only this domain."),
    last_s: int | None = Query(None, ge=1, le=3600, description="The window: the last this many seconds of writes."),
    from_: str | None = Query(
        None, alias="from", max_length=4000, description="The window's oldest GTID per domain (inclusive)."
    ),
    to: str | None = Query(None, max_length=4000, description="The window's newest GTID per domain (inclusive)."),
) -> Interleavings:
    events_max = settings.reads.interleavings_events_max
    if limit is not None and limit > events_max:
        raise Unprocessable(
            f"limit: at most {events_max} transactions per server (interleavings_events_max)",
            code="limit_too_large",
        )
    window = COUNT
    if from_ is not None or to is not None:
        if last_s is not None:
            raise Unprocessable("last_s and from/to: choose one window, by time or by GTID", code="window_conflict")
        window = gtid_window(from_, to)
    windowed = window is not COUNT or last_s is not None
    bound = limit if limit is not None else (settings.reads.interleavings_events_max if windowed else 50)
    with request.app.state.heavy_reads.held(principal.token_id, "interleavings reads"):
        return await InterleavingService(session, drivers, settings.reads.heavy_read_timeout_s).recent(
            cluster_id, bound, domain, window, last_s
        )
