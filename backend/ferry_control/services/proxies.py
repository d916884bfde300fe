"""What the configured proxies (`haproxy_admin_sockets`) say of a cluster, read live from each one's admin socket
(`show stat`): the addresses its writer and reader frontends listen on (their listeners' rows, `option
socket-stats`), which server the writer goes to, and each server's state in both backends. A proxy without the
cluster's backends is not in front of it and is left out; one that does not answer is listed with why."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ferry_control.core.config import Settings
from ferry_control.services.haproxy import runtime

#: `show stat`'s row types: 0 frontend, 1 backend, 2 server, 3 listener.
SERVER_ROW, LISTENER_ROW = "2", "3"


@dataclass
class ProxyState:
    proxy: str
    reachable: bool
    error: str | None = None
    writer_addresses: list[str] = field(default_factory=list)
    reader_addresses: list[str] = field(default_factory=list)
    #: Server id → its state in the writer backend (UP, DOWN, DRAIN, MAINT, … as HAProxy says it).
    writer_servers: dict[int, str] = field(default_factory=dict)
    reader_servers: dict[int, str] = field(default_factory=dict)

    @property
    def writer_server_id(self) -> int | None:
        """The server the writer frontend sends to: with `balance first`, the first UP in the backend's order (a
        cluster with several masters has several UP); None when none is."""
        return next((i for i, status in self.writer_servers.items() if status.startswith("UP")), None)


async def proxy_states(settings: Settings, cluster_id: int) -> list[ProxyState]:
    sockets = settings.proxies.haproxy_admin_sockets
    return [s for s in await asyncio.gather(*(_state(p, settings, cluster_id) for p in sockets)) if s is not None]


async def _state(proxy: str, settings: Settings, cluster_id: int) -> ProxyState | None:
    try:
        rows = await runtime.stat(proxy, settings.proxies.haproxy_timeout_s)
    except (OSError, TimeoutError, ValueError) as e:
        reason = f"no answer within {settings.proxies.haproxy_timeout_s:g} s" if isinstance(e, TimeoutError) else str(e)
        return ProxyState(proxy, reachable=False, error=f"cannot read the admin socket: {reason}")
    writer, reader = runtime.writer_backend(cluster_id), runtime.reader_backend(cluster_id)
    state = ProxyState(proxy, reachable=True)
    found = False
    for row in rows:
        name, kind = row.get("pxname"), row.get("type")
        if name not in (writer, reader):
            continue
        found = True
        if kind == LISTENER_ROW and row.get("addr"):
            (state.writer_addresses if name == writer else state.reader_addresses).append(row["addr"])
        elif kind == SERVER_ROW and (row.get("svname") or "").startswith("s") and row["svname"][1:].isdigit():
            servers = state.writer_servers if name == writer else state.reader_servers
            servers[int(row["svname"][1:])] = row.get("status") or ""
    return state if found else None
