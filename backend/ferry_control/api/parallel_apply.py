"""A replica's parallel apply, measured: GET …/servers/{id}/parallel-apply (the change is the `parallel_apply`
operation, POST …/operations/parallel-apply)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query

from ferry_control.api.deps import CurrentToken, DriversDep, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.parallel_apply import ParallelApplyRead
from ferry_control.services.parallel_apply import describe

router = APIRouter(prefix="/clusters/{cluster_id}/servers", tags=["servers"], responses=error_responses(401, 404, 422))

#: Bounds on the time between the two readings a measure takes.
INTERVAL_S_MIN = 0.2
INTERVAL_S_MAX = 10.0


@router.get(
    "/{registered_server_id}/parallel-apply",
    response_model=ParallelApplyRead,
    summary="A replica's parallel apply per connection, with its apply rate against its master's commit rate",
    responses=error_responses(409),
)
async def get_parallel_apply(
    session: SessionDep,
    settings: SettingsDep,
    drivers: DriversDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
    registered_server_id: int = Path(ge=1, le=ID_MAX, description="The registered server's id."),
    interval_s: float = Query(
        1.0,
        ge=INTERVAL_S_MIN,
        le=INTERVAL_S_MAX,
        description="The time between the two readings of the replica's and its master's positions the rates are "
        "measured from (the answer takes that long).",
    ),  # fmt: skip
) -> ParallelApplyRead:
    """Per connection: the mode and workers as the server reports them, and per GTID domain the master's commit
    rate, the replica's apply rate (transactions per second, from its gtid_binlog_pos and the replica's
    gtid_current_pos read twice `interval_s` apart), how far behind it is, and the verdict: `keeps_up`,
    `falls_behind` (by `falls_behind_by` txn/s), `idle`, or `unknown` (its master not registered or not reachable).
    `limits`: what the server's kind accepts for a change. 409 `server_unreachable` when the server does not
    answer now."""
    return await describe(session, drivers, settings, cluster_id, registered_server_id, interval_s)
