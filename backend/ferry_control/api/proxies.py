"""GET /clusters/{id}/haproxy-config: a HAProxy configuration for the cluster (services/haproxy/config.py), as
text, to review and run (`haproxy -c -f` passes it). Any token: it holds no secret (the checks' token comes from
HAProxy's environment). GET /clusters/{id}/proxies: what the configured proxies say of the cluster now."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import PlainTextResponse

from ferry_control.api.deps import CurrentToken, SessionDep, SettingsDep
from ferry_control.core.errors import NotFound, Unprocessable
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.proxies import ProxyServerState, ProxyStateRead
from ferry_control.services.haproxy.config import ProxiedServer, ProxyLayout, render
from ferry_control.services.proxies import proxy_states
from ferry_control.services.roles import RoleService

router = APIRouter(tags=["proxies"])

#: The errors are JSON, though the answer is text: each documented with its own content type.
JSON_ERRORS = {
    status: {"description": entry["description"],
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
    for status, entry in error_responses(401, 404, 422).items()
}  # fmt: skip


@router.get(
    "/clusters/{cluster_id}/haproxy-config",
    response_class=PlainTextResponse,
    summary="A HAProxy configuration for the cluster",
    description="A writer frontend (one server at a time: the one passing GET /roles/s<id>/writer) and a reader "
    "frontend (the replicas passing GET /roles/s<id>/reader), and the admin socket Ferry moves the writer through "
    "during switchovers and failovers (list it in the haproxy_admin_sockets setting). HAProxy needs a viewer API "
    "token in its environment as FERRY_CHECK_TOKEN.",
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}, **JSON_ERRORS},
)
async def get_haproxy_config(
    request: Request,
    session: SessionDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX),
    writer_bind: str = Query("127.0.0.1:3306", max_length=300, description="host:port of the writer frontend."),
    reader_bind: str = Query("127.0.0.1:3307", max_length=300, description="host:port of the reader frontend."),
    admin_socket: str = Query("/run/haproxy/ferry.sock", max_length=200, description="The admin socket's path."),
    ferry_address: str | None = Query(
        None, max_length=300, description="Ferry's API as HAProxy reaches it (host:port); default: this request's."
    ),
    reader_max_lag_s: float | None = Query(
        None, ge=0, le=86400, description="The readers' lag limit (default: the reader_max_lag_s setting)."
    ),  # fmt: skip
) -> PlainTextResponse:
    cluster = await ClusterRepository(session).get(cluster_id)
    if cluster is None:
        raise NotFound(f"cluster {cluster_id} does not exist")
    # The writer first: HAProxy starts every server up until its first check, and `balance first` then picks it.
    roles = RoleService(session)
    servers = sorted(
        [ProxiedServer(s.id, s.name, s.protocol_address)
         for s in await ServerRepository(session).list_for_cluster(cluster_id) if s.protocol_address is not None],
        key=lambda s: s.id,
    )  # fmt: skip
    writers = {s.id for s in servers if (await roles.writer(s.id)).ok}
    servers.sort(key=lambda s: s.id not in writers)
    address = (
        ferry_address or f"{request.url.hostname}:{request.url.port or (443 if request.url.scheme == 'https' else 80)}"
    )
    layout = ProxyLayout(writer_bind, reader_bind, admin_socket, address, reader_max_lag_s=reader_max_lag_s)
    try:
        text = render(cluster.id, cluster.name, servers, layout)
    except ValueError as e:
        raise Unprocessable(str(e), code="validation_error") from e
    return PlainTextResponse(text)


@router.get(
    "/clusters/{cluster_id}/proxies",
    response_model=list[ProxyStateRead],
    summary="The proxies in front of the cluster",
    description="Each proxy of the haproxy_admin_sockets setting that has the cluster's backends, read now from its "
    "admin socket: its writer and reader addresses, the server writes go to, each server's state; a proxy that does "
    "not answer is listed with the reason.",
    responses=error_responses(401, 404, 422),
)
async def get_proxies(
    session: SessionDep, settings: SettingsDep, _: CurrentToken, cluster_id: int = Path(ge=1, le=ID_MAX)
) -> list[ProxyStateRead]:
    if await ClusterRepository(session).get(cluster_id) is None:
        raise NotFound(f"cluster {cluster_id} does not exist")
    states = await proxy_states(settings, cluster_id)
    return [
        ProxyStateRead(
            proxy=s.proxy, reachable=s.reachable, error=s.error, writer_addresses=s.writer_addresses,
            reader_addresses=s.reader_addresses, writer_server_id=s.writer_server_id,
            servers=[ProxyServerState(server_id=i, writer=s.writer_servers.get(i), reader=s.reader_servers.get(i))
                     for i in sorted(set(s.writer_servers) | set(s.reader_servers))],
        )
        for s in states
    ]  # fmt: skip
