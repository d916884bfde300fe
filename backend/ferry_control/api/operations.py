"""Operations of a cluster: list and read them (steps update live), and start one. Every POST answers 202 with the
operation (pending; it runs in the background) and a Location header; `dry_run` runs the preflight only; an
`Idempotency-Key` header makes a retried request give back the same operation; a busy cluster is a 409 naming the
running operation.

Each operation's POST route comes from `_operation_route`: its type names the path (`read_only` → `/read-only`), the
route's name (so the operationId and the audit action) and what the runner starts. This module does not use
`from __future__ import annotations`: the routes' parameter annotations are evaluated when they are made, so the
factory's request model (a variable) is the real class FastAPI reads the body with."""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Header, Path, Query, Request, Response, status

from ferry_control.api.deps import CurrentToken, DriversDep, OperatorToken, RunnerDep, SessionDep, SettingsDep
from ferry_control.core.security import Role
from ferry_control.schemas.cluster import REDACTED
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.operation import (
    PARAMS,
    BringLevelRequest,
    DrillOperation,
    FailoverRequest,
    OperationRead,
    OperationRequest,
    ParallelApplyRequest,
    ReadOnlyRequest,
    RejoinRequest,
    RepointRequest,
    SkipTransactionsRequest,
    StartReplicationRequest,
    StopReplicationRequest,
    SwitchoverRequest,
)
from ferry_control.services.operation_prechecks import precheck_parallel_apply, precheck_skip_transactions
from ferry_control.services.operations import OperationService

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
OperationTypeName = Literal[
    "switchover",
    "failover",
    "repoint",
    "read_only",
    "start_replication",
    "stop_replication",
    "bring_level",
    "skip_transactions",
    "parallel_apply",
    "drill",
    "rejoin",
]
#: Checks a request against the live servers before the operation is accepted (a precise 4xx, nothing recorded).
Precheck = Callable[..., Awaitable[None]]
START_RESPONSES: dict[int | str, dict[str, Any]] = {
    **error_responses(403, 409),
    202: {"description": "Accepted: the operation runs in the background; poll it or follow the events stream."},
}


@router.get("", response_model=list[OperationRead], summary="List operations, newest first")
async def list_operations(
    session: SessionDep,
    principal: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX),
    limit: int = Query(50, ge=1, le=500),
    before_id: int | None = Query(None, ge=1, le=ID_MAX, description="Page back: operations with a smaller id."),
    type_: list[OperationTypeName] | None = Query(
        None,
        alias="type",
        max_length=len(get_args(OperationTypeName)),
        description="Only operations of these types (repeat the parameter; each at most once).",
    ),
    dry_run: bool | None = Query(None, description="Only dry runs (true) or only real operations (false)."),
) -> list[OperationRead]:
    operations = await OperationService(session).list(cluster_id, limit, before_id, types=type_, dry_run=dry_run)
    return [_for_role(OperationRead.of(o), principal.role) for o in operations]


@router.get("/{operation_id}", response_model=OperationRead, summary="Get an operation and its steps")
async def get_operation(
    session: SessionDep,
    principal: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX),
    operation_id: int = Path(ge=1, le=ID_MAX),
) -> OperationRead:
    operation = await OperationService(session).get(cluster_id, operation_id)
    return _for_role(OperationRead.of(operation), principal.role)


def _for_role(read: OperationRead, role: Role) -> OperationRead:
    """A viewer does not see a drill's webhook URL among the parameters."""
    operation = read.root
    if isinstance(operation, DrillOperation) and operation.params.webhook_url and not role.allows(Role.operator):
        operation.params = operation.params.model_copy(update={"webhook_url": REDACTED})
    return read


def _operation_route(
    type_: str,
    request_model: type[OperationRequest],
    summary: str,
    description: str | None = None,
    precheck: Precheck | None = None,
) -> None:
    """Registers `POST /{type-with-dashes}` starting an operation of `type_` with a body of `request_model`; a
    `precheck(session, drivers, settings, cluster_id, params)` refuses it first where it can tell at once."""

    async def start(
        body: OperationRequest,  # replaced below by the concrete model: the schema of the request body
        request: Request,
        response: Response,
        session: SessionDep,
        runner: RunnerDep,
        settings: SettingsDep,
        drivers: DriversDep,
        principal: OperatorToken,
        idempotency_key: IdempotencyKey = None,
        cluster_id: int = ClusterId,
    ) -> OperationRead:
        params = PARAMS[type_].model_validate(body.model_dump(exclude={"dry_run"}))
        if precheck is not None:
            await precheck(session, drivers, settings, cluster_id, params)
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
        # The audit row links the operation (a dry run told apart from a run by the operation itself).
        request.state.audit_details = {"operation_id": operation.id, "dry_run": operation.dry_run}
        if not new:
            response.headers["Idempotent-Replayed"] = "true"
        return OperationRead.of(operation)

    # FastAPI reads the body's schema from the annotation: the operation's own request model.
    start.__annotations__["body"] = request_model
    router.post(
        "/" + type_.replace("_", "-"),
        name=type_,
        response_model=OperationRead,
        status_code=status.HTTP_202_ACCEPTED,
        responses=START_RESPONSES,
        summary=summary,
        description=description,
    )(start)


_operation_route(
    "switchover",
    SwitchoverRequest,
    summary="Planned switchover to a candidate (or the best replica)",
    description="Preflight checks (expected master, candidate healthy and replicating, errant GTIDs per domain, lag "
    "under the limit, replicas reachable), pre-hooks, old master read-only, in-flight commits, the candidate reaches "
    "the old master's position (else undo), promotion, replicas repointed, old master follows, verification.",
)
_operation_route(
    "failover",
    FailoverRequest,
    summary="Failover from a lost master to the most advanced replica",
    description="Refused while the master answers or a replica is still connected to it. Replicas apply what they "
    "received, the most advanced (leveled from its peers where none is ahead in every domain) is promoted, the others "
    "follow it, the old master is fenced, and the GTIDs that may be lost are reported.",
)
_operation_route("repoint", RepointRequest, summary="Make a server replicate from another master (by GTID)")
_operation_route("read_only", ReadOnlyRequest, summary="Turn a server's read-only flag on or off")
_operation_route(
    "rejoin",
    RejoinRequest,
    summary="Bring a fenced former master back as a read-only replica of the new master",
    description="Compares its GTIDs with the source's per domain (binlog states): with nothing only it has, it "
    "replicates from the source (current_pos, the cluster's connection conventions and a sibling's replica-side "
    "settings), stays read-only and is no longer fenced; with transactions only it has (acknowledged before it was "
    "replaced, never replicated), nothing is changed and they are listed per domain with their GTIDs, times and "
    "tables. The cluster's `auto_rejoin` starts it by itself when a fenced server answers again.",
)
_operation_route(
    "start_replication", StartReplicationRequest, summary="Start a replication connection (optionally UNTIL a position)"
)
_operation_route("stop_replication", StopReplicationRequest, summary="Stop a replication connection")
_operation_route(
    "bring_level",
    BringLevelRequest,
    summary="Bring a server level with another (START … UNTIL its position, then wait)",
)
_operation_route(
    "skip_transactions",
    SkipTransactionsRequest,
    summary="Skip the transaction(s) that stopped a replica's connection, then start it again (loses them there)",
    description="For a connection stopped by an SQL error (e.g. MariaDB's 1062 duplicate key) or stopped by hand: "
    "names the GTIDs that will be skipped (the next ones after the replica's gtid_slave_pos in its master's binlog, "
    "else the one the error names), sets the skip counter (sql_slave_skip_counter), starts the connection and "
    "checks that it replicates again. The skipped transactions are not applied on that replica and never will be: "
    "the result's `data_loss` says so. 404 `connection_not_found`, 409 `connection_running` (nothing changed); "
    "`count` is 1 to 100.",
    precheck=precheck_skip_transactions,
)
_operation_route(
    "parallel_apply",
    ParallelApplyRequest,
    summary="Change a replica connection's parallel apply online (mode, workers, at most per domain)",
    description="The connection's applying side stops at a transaction boundary and starts again at its position "
    "(MariaDB: STOP/START SLAVE 'c' SQL_THREAD around SET GLOBAL; slave_parallel_threads is one pool for the whole "
    "server, so a new worker count pauses every connection's SQL thread for the moment), or takes the change between "
    "two commit groups (ferryd); the receiving side goes on; nothing is skipped or applied twice. What the body "
    "leaves out stays as it is. 404 `connection_not_found`, 422 `parallel_apply_invalid` (values the server's kind "
    "refuses; nothing changed). See GET …/servers/{id}/parallel-apply for the rates.",
    precheck=precheck_parallel_apply,
)
