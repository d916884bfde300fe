"""A cluster's host access (the SSH login a rebuild reaches its servers' hosts with): read by every role without the
key; set (PUT) and cleared (DELETE) by admins only. The private key is write-only and never in an answer or an
audit row."""

from __future__ import annotations

from fastapi import APIRouter, Path, Request, Response, status

from ferry_control.api.deps import AdminToken, CurrentToken, SecretsDep, SessionDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.host_access import HostAccessRead, HostAccessWrite
from ferry_control.services.host_access import HostAccessService

router = APIRouter(
    prefix="/clusters/{cluster_id}/host-access", tags=["clusters"], responses=error_responses(401, 404, 422)
)

ClusterId = Path(description="The cluster's id.", ge=1, le=ID_MAX, examples=[1])


@router.get("", response_model=HostAccessRead, summary="Get the cluster's host access (never its private key)")
async def get_host_access(
    session: SessionDep, secrets: SecretsDep, _: CurrentToken, cluster_id: int = ClusterId
) -> HostAccessRead:
    return await HostAccessService(session, secrets).get(cluster_id)


@router.put(
    "",
    response_model=HostAccessRead,
    summary="Set the cluster's host access: SSH login, known_hosts, stop/start commands (admin)",
    description="The SSH login a rebuild reaches the cluster's hosts with. `private_key` is write-only (stored "
    "encrypted, never returned; left out: the stored key is kept). `known_hosts` is required: a host showing a key "
    "not listed for it is refused. 422 `host_access_invalid` names what is wrong with the key or a known_hosts line; "
    "409 `operation_running` while an operation holds the cluster.",
    responses=error_responses(403, 409),
)
async def put_host_access(
    data: HostAccessWrite,
    request: Request,
    session: SessionDep,
    secrets: SecretsDep,
    _: AdminToken,
    cluster_id: int = ClusterId,
) -> HostAccessRead:
    read, audit = await HostAccessService(session, secrets).put(cluster_id, data)
    request.state.audit_details = audit
    return read


@router.delete(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Clear the cluster's host access, key included (admin)",
    responses=error_responses(403, 409),
)
async def delete_host_access(
    session: SessionDep, secrets: SecretsDep, _: AdminToken, cluster_id: int = ClusterId
) -> Response:
    await HostAccessService(session, secrets).clear(cluster_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
