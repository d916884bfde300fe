"""Operations of a cluster: list and read them (steps update live), and start one. Every POST answers 202 with the
operation (pending; it runs in the background) and a Location header; `dry_run` runs the preflight only; an
`Idempotency-Key` header makes a retried request give back the same operation; a busy cluster is a 409 naming the
running operation.

Each operation's POST route comes from its kind's declaration (services/orchestrator/kinds.py, `_operation_route`):
its type names the path (`read_only` → `/read-only`), the route's name (so the operationId and the audit action) and
what the runner starts. This module does not use
`from __future__ import annotations`: the routes' parameter annotations are evaluated when they are made, so the
factory's request model (a variable) is the real class FastAPI reads the body with."""

from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import APIRouter, Header, Path, Query, Request, Response, status

from ferry_control.api.deps import CurrentToken, DriversDep, OperatorToken, RunnerDep, SessionDep, SettingsDep
from ferry_control.core.security import Role
from ferry_control.schemas.cluster import REDACTED
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.operation import OPERATION_TYPES, DrillOperation, OperationRead, OperationRequest
from ferry_control.services.operations import OperationService
from ferry_control.services.orchestrator.kinds import KINDS, OperationKind, Route

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
if TYPE_CHECKING:
    OperationTypeName = str
else:  # the enum of the operation types, as the schemas' union of operations has them
    OperationTypeName = Literal[OPERATION_TYPES]
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
        max_length=len(OPERATION_TYPES),
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


@router.post(
    "/{operation_id}/cancel",
    response_model=OperationRead,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Cancel a running operation",
    description="Stops the operation as its other stops do (its guard puts back what it can; its failure's kind is "
    "`cancelled`, with `changed` and `left` saying what it left). A rebuild leaves its recipient stopped and marked, "
    "never half-joined. 409 `operation_not_running` when it is not pending or running.",
    responses=error_responses(403, 409),
)
async def cancel_operation(
    request: Request,
    session: SessionDep,
    runner: RunnerDep,
    principal: OperatorToken,
    cluster_id: int = Path(ge=1, le=ID_MAX),
    operation_id: int = Path(ge=1, le=ID_MAX),
) -> OperationRead:
    operation = await OperationService(session).cancel(runner, cluster_id, operation_id, principal.name)
    request.state.audit_details = {"operation_id": operation.id, "type": operation.type}
    return OperationRead.of(operation)


def _for_role(read: OperationRead, role: Role) -> OperationRead:
    """A viewer does not see a drill's webhook URL among the parameters."""
    operation = read.root
    if isinstance(operation, DrillOperation) and operation.params.webhook_url and not role.allows(Role.operator):
        operation.params = operation.params.model_copy(update={"webhook_url": REDACTED})
    return read


def _operation_route(kind: OperationKind, route: Route) -> None:
    """Registers `POST /{type-with-dashes}` starting an operation of `kind` with a body of `route.request`; its
    `precheck(session, drivers, settings, cluster_id, params)` refuses it first where it can tell at once."""
    type_ = kind.name
    precheck = route.precheck

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
        params = kind.params.model_validate(body.model_dump(exclude={"dry_run"}))
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
    start.__annotations__["body"] = route.request
    router.post(
        "/" + type_.replace("_", "-"),
        name=type_,
        response_model=OperationRead,
        status_code=status.HTTP_202_ACCEPTED,
        responses=START_RESPONSES,
        summary=route.summary,
        description=route.description,
    )(start)


for _kind in KINDS:
    if _kind.route is not None:
        _operation_route(_kind, _kind.route)
