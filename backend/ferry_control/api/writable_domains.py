"""The domains a replicating server is writable for: read by anyone, set by an admin (the replica guard leaves such a
server writable, so this is a decision about the cluster's history, not an everyday setting)."""

from __future__ import annotations

from fastapi import APIRouter, Path

from ferry_control.api.deps import AdminToken, CurrentToken, SessionDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.replica_guard import WritableDomainsRead, WritableDomainsUpdate
from ferry_control.services.writable_domains import WritableDomainsService

router = APIRouter(
    prefix="/clusters/{cluster_id}/servers/{registered_server_id}/writable-domains",
    tags=["servers"],
    responses=error_responses(401, 404, 422),
)

ClusterId = Path(description="The cluster's id.", ge=1, le=ID_MAX, examples=[1])
ServerId = Path(description="The registered server's id.", ge=1, le=ID_MAX, examples=[3])


@router.get("", response_model=WritableDomainsRead, summary="The domains a replicating server is writable for")
async def get_writable_domains(
    session: SessionDep, _: CurrentToken, cluster_id: int = ClusterId, registered_server_id: int = ServerId
) -> WritableDomainsRead:
    return await WritableDomainsService(session).get(cluster_id, registered_server_id)


@router.put(
    "",
    response_model=WritableDomainsRead,
    summary="Make a replicating server writable for its own domains (admin), or a plain read-only replica again",
    responses=error_responses(403),
)
async def set_writable_domains(
    data: WritableDomainsUpdate,
    session: SessionDep,
    principal: AdminToken,
    cluster_id: int = ClusterId,
    registered_server_id: int = ServerId,
) -> WritableDomainsRead:
    """A multi-source replica that takes writes of its own, each in a domain none of its masters writes: the replica
    guard leaves it writable and its own transactions in these domains are not errant (in any other domain they
    still are). An empty list makes it a replica like any other: the guard makes it read-only at its next look
    (when its cluster enforces it). This does not change the server's read-only flag itself."""
    return await WritableDomainsService(session).set(cluster_id, registered_server_id, data.domains, principal.name)
