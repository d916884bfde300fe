"""POST /clusters/{id}/discovery: register one server and discover the rest of its replication graph."""

from __future__ import annotations

from fastapi import APIRouter, Path

from ferry_control.api.deps import DriversDep, OperatorToken, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.discovery import DiscoveryNote, DiscoveryRequest, DiscoveryResult
from ferry_control.schemas.server import ServerRead
from ferry_control.services.approval import Approver
from ferry_control.services.discovery import DiscoveryService

router = APIRouter(tags=["discovery"], responses=error_responses(401, 403, 404, 422))


@router.post(
    "/clusters/{cluster_id}/discovery",
    response_model=DiscoveryResult,
    summary="Register a server and discover its masters and replicas",
)
async def discover(
    data: DiscoveryRequest,
    session: SessionDep,
    drivers: DriversDep,
    settings: SettingsDep,
    principal: OperatorToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
) -> DiscoveryResult:
    """Only approved servers are visited. A server registered here is approved when the caller's token is an
    admin's or `server_trusted_hosts` names its host; otherwise it is registered pending (`approved: false`, a note
    says so) and nothing connects to it until an admin approves it. Changing an approved seed's admin port to an
    address the caller cannot approve is refused (403 `address_change_needs_admin`)."""
    found = await DiscoveryService(session, drivers, settings).discover(
        cluster_id, data, Approver(principal.name, principal.role)
    )
    return DiscoveryResult(
        seed=ServerRead.model_validate(found.seed),
        added=[ServerRead.model_validate(s) for s in found.added],
        known=[ServerRead.model_validate(s) for s in found.known],
        notes=[DiscoveryNote(registered_server_id=server_id, message=message) for server_id, message in found.notes],
    )
