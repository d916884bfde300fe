"""GET /clusters/{id}/haproxy-config: a HAProxy configuration for the cluster (services/haproxy/config.py), as
text, to review and run (`haproxy -c -f` passes it). Any token: it holds no secret (the checks' token comes from
HAProxy's environment). GET /clusters/{id}/proxies: what the configured proxies say of the cluster now."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import PlainTextResponse

from ferry_control.api.deps import CurrentToken, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.proxies import ProxyServerState, ProxyStateRead
from ferry_control.services.cluster_proxies import ClusterProxies
from ferry_control.services.haproxy.config import ProxyLayout

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
    settings: SettingsDep,
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
    ),
    check_interval_ms: int = Query(
        250,
        ge=100,
        le=60000,
        description="How often HAProxy asks for each server's writer role, in milliseconds; "
        "the reader role is asked every second, or at this interval when it is longer. Every check is an API "
        "request: a proxy in front of N servers sends about N × (1000 / this + 1) a second.",
    ),
) -> PlainTextResponse:
    address = (
        ferry_address or f"{request.url.hostname}:{request.url.port or (443 if request.url.scheme == 'https' else 80)}"
    )
    layout = ProxyLayout(
        writer_bind, reader_bind, admin_socket, address, check_interval_ms=check_interval_ms,
        reader_max_lag_s=reader_max_lag_s,
    )  # fmt: skip
    text = await ClusterProxies(session, settings).haproxy_config(cluster_id, layout)
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
    states = await ClusterProxies(session, settings).states(cluster_id)
    return [
        ProxyStateRead(
            proxy=s.proxy, reachable=s.reachable, error=s.error, writer_addresses=s.writer_addresses,
            reader_addresses=s.reader_addresses, writer_registered_server_id=s.writer_server_id,
            servers=[ProxyServerState(registered_server_id=i, writer=s.writer_servers.get(i),
                                      reader=s.reader_servers.get(i))
                     for i in sorted(set(s.writer_servers) | set(s.reader_servers))],
        )
        for s in states
    ]  # fmt: skip
