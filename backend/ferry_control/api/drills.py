"""Drills of a cluster (switchover or failover): cron schedules with a time zone (next run times included), runs with
their figures (RTO, a failover drill's RPO), and run-now (202: the run is an operation of type `drill` running in
the background)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Response, status

from ferry_control.api.deps import CurrentToken, OperatorToken, RunnerDep, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.drill import (
    DrillRunCreate,
    DrillRunRead,
    DrillScheduleCreate,
    DrillScheduleRead,
    DrillScheduleUpdate,
)
from ferry_control.schemas.operation import OperationRead
from ferry_control.services.drills import DrillService, read_schedule

router = APIRouter(prefix="/clusters/{cluster_id}/drills", tags=["drills"], responses=error_responses(401, 404, 422))

ClusterId = Path(ge=1, le=ID_MAX, description="The cluster's id.", examples=[1])
ScheduleId = Path(ge=1, le=ID_MAX, description="The drill schedule's id.", examples=[1])


@router.get("/schedules", response_model=list[DrillScheduleRead], summary="List drill schedules")
async def list_schedules(
    session: SessionDep, principal: CurrentToken, cluster_id: int = ClusterId
) -> list[DrillScheduleRead]:
    return [read_schedule(s, role=principal.role) for s in await DrillService(session).schedules(cluster_id)]


@router.post(
    "/schedules",
    response_model=DrillScheduleRead,
    status_code=status.HTTP_201_CREATED,
    summary="Create a drill schedule",
    responses=error_responses(400, 403, 409),
)
async def create_schedule(
    data: DrillScheduleCreate, session: SessionDep, settings: SettingsDep, _: OperatorToken, cluster_id: int = ClusterId
) -> DrillScheduleRead:
    return read_schedule(await DrillService(session, settings).create_schedule(cluster_id, data))


@router.get("/schedules/{schedule_id}", response_model=DrillScheduleRead, summary="Get a drill schedule")
async def get_schedule(
    session: SessionDep, principal: CurrentToken, cluster_id: int = ClusterId, schedule_id: int = ScheduleId
) -> DrillScheduleRead:
    return read_schedule(await DrillService(session).schedule(cluster_id, schedule_id), role=principal.role)


@router.patch(
    "/schedules/{schedule_id}",
    response_model=DrillScheduleRead,
    summary="Update a drill schedule",
    responses=error_responses(400, 403, 409),
)
async def update_schedule(
    data: DrillScheduleUpdate,
    session: SessionDep,
    settings: SettingsDep,
    _: OperatorToken,
    cluster_id: int = ClusterId,
    schedule_id: int = ScheduleId,
) -> DrillScheduleRead:
    return read_schedule(await DrillService(session, settings).update_schedule(cluster_id, schedule_id, data))


@router.delete(
    "/schedules/{schedule_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Delete a drill schedule (its runs are kept)",
    responses=error_responses(403),
)
async def delete_schedule(
    session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId, schedule_id: int = ScheduleId
) -> Response:
    await DrillService(session).delete_schedule(cluster_id, schedule_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/runs",
    response_model=DrillRunRead,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Run a drill now",
    responses=error_responses(403, 409),
)
async def run_now(
    data: DrillRunCreate,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    cluster_id: int = ClusterId,
) -> DrillRunRead:
    run = await DrillService(session).run_now(runner, settings, cluster_id, data, principal.name)
    response.headers["Location"] = f"/api/v1/clusters/{cluster_id}/drills/runs/{run.id}"
    return DrillRunRead.model_validate(run)


@router.post(
    "/dry-run",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    summary="What a drill would do: its preflight, nothing changed (a switchover drill's: the switchover dry run)",
    responses=error_responses(403, 409),
)
async def dry_run(
    data: DrillRunCreate,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    cluster_id: int = ClusterId,
) -> OperationRead:
    """Changes nothing and records no drill run; follow it at GET /clusters/{cluster_id}/operations/{id}. A
    switchover drill (`kind` switchover): a `switchover` dry run from the plan's source to the candidate the drill
    would take (fixed, or next in rotation from the collector's last view): its result has the preflight checks and
    `plan` (positions per domain, lenders, what each server replicates from afterwards). A failover drill: a `drill`
    dry run whose `preflight` step names the master, the candidate, the domains it must keep and every replica that
    cannot replace the master with why; its result has the candidate's checks; it fails, saying why, when no replica
    can take over keeping every domain."""
    operation = await DrillService(session).dry_run(runner, settings, cluster_id, data, principal.name)
    return OperationRead.of(operation)


@router.get("/runs", response_model=list[DrillRunRead], summary="List drill runs, newest first")
async def list_runs(
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = ClusterId,
    limit: int = Query(50, ge=1, le=500),
    before_id: int | None = Query(None, ge=1, le=ID_MAX, description="Page back: runs with a smaller id."),
) -> list[DrillRunRead]:
    return [DrillRunRead.model_validate(r) for r in await DrillService(session).runs(cluster_id, limit, before_id)]


@router.get("/runs/{run_id}", response_model=DrillRunRead, summary="Get a drill run and its figures")
async def get_run(
    session: SessionDep, _: CurrentToken, cluster_id: int = ClusterId, run_id: int = Path(ge=1, le=ID_MAX)
) -> DrillRunRead:
    return DrillRunRead.model_validate(await DrillService(session).run(cluster_id, run_id))
