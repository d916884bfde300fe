"""Servers of a cluster: CRUD, maintenance (owner, reason, end), and clearing a fence."""

from __future__ import annotations

from fastapi import APIRouter, Path, Request, Response, status

from ferry_control.api.deps import AdminToken, BusDep, CurrentToken, OperatorToken, SessionDep, SettingsDep
from ferry_control.core.config import Settings
from ferry_control.core.db import after_commit
from ferry_control.models import Server
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.events import MaintenanceEvent
from ferry_control.schemas.server import MaintenanceUpdate, ServerCreate, ServerRead, ServerUpdate
from ferry_control.services.approval import Approver, TrustedHosts
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.servers import ServerService, maintenance_audit
from ferry_control.services.tokens import Principal

router = APIRouter(prefix="/clusters/{cluster_id}/servers", tags=["servers"], responses=error_responses(401, 404, 422))

ClusterId = Path(description="The cluster's id.", ge=1, le=ID_MAX, examples=[1])
ServerId = Path(description="The registered server's id.", ge=1, le=ID_MAX, examples=[3])


def approving(session: SessionDep, settings: Settings) -> ServerService:
    """The service, knowing which addresses the deployment trusts (`server_trusted_hosts`)."""
    return ServerService(session, TrustedHosts.of(settings.security.server_trusted_hosts))


def approver(principal: Principal) -> Approver:
    return Approver(principal.name, principal.role)


@router.get("", response_model=list[ServerRead], summary="List a cluster's servers")
async def list_servers(session: SessionDep, _: CurrentToken, cluster_id: int = ClusterId) -> list[ServerRead]:
    return [ServerRead.model_validate(s) for s in await ServerService(session).list(cluster_id)]


@router.post(
    "",
    response_model=ServerRead,
    status_code=status.HTTP_201_CREATED,
    summary="Register a server",
    responses=error_responses(403, 409),
)
async def create_server(
    data: ServerCreate,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    principal: OperatorToken,
    cluster_id: int = ClusterId,
) -> ServerRead:
    """`maintenance`: registered in maintenance, owned by the caller's token. Registered by an admin's token, or at
    an address `server_trusted_hosts` names, it is approved (polled with its cluster's credentials); otherwise it
    is pending (`approved: false`): nothing connects to it until an admin approves it."""
    server = await approving(session, settings).create(cluster_id, data, approver(principal))
    details = maintenance_audit(server) if server.maintenance_set else {}
    request.state.audit_details = {**details, "registered_server_id": server.id, "server": server.label}
    return ServerRead.model_validate(server)


@router.get("/{registered_server_id}", response_model=ServerRead, summary="Get a server")
async def get_server(
    session: SessionDep, _: CurrentToken, cluster_id: int = ClusterId, registered_server_id: int = ServerId
) -> ServerRead:
    return ServerRead.model_validate(await ServerService(session).get(cluster_id, registered_server_id))


@router.patch(
    "/{registered_server_id}", response_model=ServerRead, summary="Update a server", responses=error_responses(403, 409)
)
async def update_server(
    data: ServerUpdate,
    session: SessionDep,
    settings: SettingsDep,
    principal: OperatorToken,
    cluster_id: int = ClusterId,
    registered_server_id: int = ServerId,
) -> ServerRead:
    """Refused while an operation runs on the cluster (409 `operation_running`); moving a server that receives
    credentials to another address takes an admin's token (403 `address_change_needs_admin`); any other move by an
    operator to an address `server_trusted_hosts` does not name leaves the server pending an admin's approval."""
    server = await approving(session, settings).update(cluster_id, registered_server_id, data, approver(principal))
    return ServerRead.model_validate(server)


@router.post(
    "/{registered_server_id}/approve",
    response_model=ServerRead,
    summary="Approve a server's address (admin): the control plane then polls it with its cluster's credentials",
    responses=error_responses(403),
)
async def approve_server(
    session: SessionDep,
    settings: SettingsDep,
    principal: AdminToken,
    cluster_id: int = ClusterId,
    registered_server_id: int = ServerId,
) -> ServerRead:
    """Approves the address the server has now; a later move by an operator needs approving again."""
    server = await approving(session, settings).approve(cluster_id, registered_server_id, approver(principal))
    return ServerRead.model_validate(server)


@router.put(
    "/{registered_server_id}/maintenance",
    response_model=ServerRead,
    summary="Start maintenance (a reason and an end) or end it",
    responses=error_responses(403, 409),
)
async def set_maintenance(
    data: MaintenanceUpdate,
    request: Request,
    session: SessionDep,
    principal: OperatorToken,
    bus: BusDep,
    cluster_id: int = ClusterId,
    registered_server_id: int = ServerId,
) -> ServerRead:
    """The owner is the caller's token. A maintenance ends by itself at its end (`maintenance_detail.until`): from
    then on the server is out of maintenance for candidate choice, the failover monitor and every read, and the
    worker records the end (an audit row `maintenance_expired` and a `maintenance` event). 422 with a precise message
    for a missing reason, a missing, past or too distant end (at most 7 days); 409 `operation_running` while an
    operation holds the cluster (whether a server is in maintenance decides what the operation may do with it)."""
    server = await ServerService(session).set_maintenance(cluster_id, registered_server_id, data, owner=principal.name)
    request.state.audit_details = maintenance_audit(server)
    event = ClusterEvent.of(cluster_id, maintenance_event(server))
    after_commit(session, lambda: bus.publish(event))  # whoever refreshes on it reads the change
    return ServerRead.model_validate(server)


def maintenance_event(server: Server) -> MaintenanceEvent:
    """An operator started or ended a server's maintenance."""
    return MaintenanceEvent(
        registered_server_id=server.id, maintenance=server.maintenance_set, by="operator",
        owner=server.maintenance_owner, reason=server.maintenance_reason, until=server.maintenance_until,
    )  # fmt: skip


@router.post(
    "/{registered_server_id}/unfence",
    response_model=ServerRead,
    summary="Clear a fenced former master's fence (it stays read-only; repointing it also clears the fence)",
    responses=error_responses(403, 409),
)
async def unfence_server(
    session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId, registered_server_id: int = ServerId
) -> ServerRead:
    return ServerRead.model_validate(await ServerService(session).unfence(cluster_id, registered_server_id))


@router.delete(
    "/{registered_server_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Remove a server (and its samples and links); 409 `operation_running` while an operation runs",
    responses=error_responses(403, 409),
)
async def delete_server(
    session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId, registered_server_id: int = ServerId
) -> Response:
    await ServerService(session).delete(cluster_id, registered_server_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
