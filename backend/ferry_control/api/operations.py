"""Operations of a cluster: list and read them (steps update live), and start one. Every POST answers 202 with the
operation (pending; it runs in the background) and a Location header; `dry_run` runs the preflight only; an
`Idempotency-Key` header makes a retried request give back the same operation; a busy cluster is a 409 naming the
running operation."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Path, Query, Response, status

from ferry_control.api.deps import CurrentToken, OperatorToken, RunnerDep, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.operation import (
    BringLevelRequest,
    FailoverRequest,
    OperationRead,
    OperationRequest,
    ReadOnlyRequest,
    RepointRequest,
    StartReplicationRequest,
    StopReplicationRequest,
    SwitchoverRequest,
)
from ferry_control.services.operations import OperationService
from ferry_control.services.tokens import Principal

router = APIRouter(
    prefix="/clusters/{cluster_id}/operations", tags=["operations"], responses=error_responses(401, 404, 422)
)

ClusterId = Path(ge=1, le=ID_MAX, description="The cluster's id.", examples=[1])
IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=200,
        description="Retrying with the same key gives back the same operation instead of starting another.",
    ),
]
START_RESPONSES: dict[int | str, dict[str, Any]] = {
    **error_responses(403, 409),
    202: {"description": "Accepted: the operation runs in the background; poll it or follow the events stream."},
}


@router.get("", response_model=list[OperationRead], summary="List operations, newest first")
async def list_operations(
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX),
    limit: int = Query(50, ge=1, le=500),
    before_id: int | None = Query(None, ge=1, le=ID_MAX, description="Page back: operations with a smaller id."),
) -> list[OperationRead]:
    return [OperationRead.model_validate(o) for o in await OperationService(session).list(cluster_id, limit, before_id)]


@router.get("/{operation_id}", response_model=OperationRead, summary="Get an operation and its steps")
async def get_operation(
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX),
    operation_id: int = Path(ge=1, le=ID_MAX),
) -> OperationRead:
    return OperationRead.model_validate(await OperationService(session).get(cluster_id, operation_id))


async def _start(
    type_: str,
    body: OperationRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: Principal,
    cluster_id: int,
    idempotency_key: str | None,
) -> OperationRead:
    params = body.model_dump(exclude={"dry_run"})
    operation, new = await OperationService(session).start(
        runner,
        settings,
        cluster_id=cluster_id,
        type_=type_,
        params=params,
        dry_run=body.dry_run,
        requester=principal.name,
        idempotency_key=idempotency_key,
    )
    response.headers["Location"] = f"/api/v1/clusters/{cluster_id}/operations/{operation.id}"
    if not new:
        response.headers["Idempotent-Replayed"] = "true"
    return OperationRead.model_validate(operation)


@router.post(
    "/switchover",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=START_RESPONSES,
    summary="Planned switchover to a candidate (or the best replica)",
    description="Preflight checks (expected master, candidate healthy and replicating, errant GTIDs per domain, lag "
    "under the limit, replicas reachable), pre-hooks, old master read-only, in-flight commits, the candidate reaches "
    "the old master's position (else undo), promotion, replicas repointed, old master follows, verification.",
)
async def switchover(
    body: SwitchoverRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    idempotency_key: IdempotencyKey = None,
    cluster_id: int = ClusterId,
) -> OperationRead:
    return await _start("switchover", body, response, session, runner, settings, principal, cluster_id, idempotency_key)


@router.post(
    "/failover",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=START_RESPONSES,
    summary="Failover from a lost master to the most advanced replica",
    description="Refused while the master answers or a replica is still connected to it. Replicas apply what they "
    "received, the most advanced (leveled from its peers where none is ahead in every domain) is promoted, the others "
    "follow it, the old master is fenced, and the GTIDs that may be lost are reported.",
)
async def failover(
    body: FailoverRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    idempotency_key: IdempotencyKey = None,
    cluster_id: int = ClusterId,
) -> OperationRead:
    return await _start("failover", body, response, session, runner, settings, principal, cluster_id, idempotency_key)


@router.post(
    "/repoint",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=START_RESPONSES,
    summary="Make a server replicate from another master (by GTID)",
)
async def repoint(
    body: RepointRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    idempotency_key: IdempotencyKey = None,
    cluster_id: int = ClusterId,
) -> OperationRead:
    return await _start("repoint", body, response, session, runner, settings, principal, cluster_id, idempotency_key)


@router.post(
    "/read-only",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=START_RESPONSES,
    summary="Turn a server's read-only flag on or off",
)
async def read_only(
    body: ReadOnlyRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    idempotency_key: IdempotencyKey = None,
    cluster_id: int = ClusterId,
) -> OperationRead:
    return await _start("read_only", body, response, session, runner, settings, principal, cluster_id, idempotency_key)


@router.post(
    "/start-replication",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=START_RESPONSES,
    summary="Start a replication connection (optionally UNTIL a position)",
)
async def start_replication(
    body: StartReplicationRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    idempotency_key: IdempotencyKey = None,
    cluster_id: int = ClusterId,
) -> OperationRead:
    return await _start(
        "start_replication", body, response, session, runner, settings, principal, cluster_id, idempotency_key
    )


@router.post(
    "/stop-replication",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=START_RESPONSES,
    summary="Stop a replication connection",
)
async def stop_replication(
    body: StopReplicationRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    idempotency_key: IdempotencyKey = None,
    cluster_id: int = ClusterId,
) -> OperationRead:
    return await _start(
        "stop_replication", body, response, session, runner, settings, principal, cluster_id, idempotency_key
    )


@router.post(
    "/bring-level",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    responses=START_RESPONSES,
    summary="Bring a server level with another (START … UNTIL its position, then wait)",
)
async def bring_level(
    body: BringLevelRequest,
    response: Response,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    principal: OperatorToken,
    idempotency_key: IdempotencyKey = None,
    cluster_id: int = ClusterId,
) -> OperationRead:
    return await _start(
        "bring_level", body, response, session, runner, settings, principal, cluster_id, idempotency_key
    )
