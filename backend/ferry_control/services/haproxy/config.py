"""A HAProxy configuration for one cluster (HAProxy 2.6), rendered from what Ferry knows of it:

- a writer frontend and backend: every server of the cluster, each checked against Ferry's writer role endpoint
  (`GET /api/v1/roles/s<id>/writer`, services/roles.py) every 250 ms — only the writable master passes, and
  `balance first` keeps the traffic on one server even where a cluster has several masters;
- a reader frontend and backend: the replicas that pass the reader check (read-only, replicating, within the lag
  limit), round robin;
- the admin socket (`level admin`) through which Ferry moves the writer at once during a switchover or failover
  (runtime.py), so applications do not wait for the checks.

The checks authenticate with an API token HAProxy reads from its environment (`FERRY_CHECK_TOKEN`): the rendered
file holds no secret. Every value put in the file is checked first (addresses and paths of plain characters only),
so no parameter can add a line of its own."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ferry_control.services.haproxy.runtime import reader_backend, server_name, writer_backend

#: The environment variable HAProxy reads the checks' API token from.
TOKEN_VARIABLE = "FERRY_CHECK_TOKEN"
ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253}):[0-9]{1,5}$")
SOCKET_PATH = re.compile(r"^/[A-Za-z0-9_./-]{1,200}$")


@dataclass(frozen=True)
class ProxiedServer:
    id: int
    name: str
    address: str


@dataclass(frozen=True)
class ProxyLayout:
    """Where the proxy listens and whom it asks."""

    writer_bind: str
    reader_bind: str
    admin_socket: str
    #: Ferry's API as the proxy reaches it (host:port), for the role checks.
    ferry_address: str
    #: How often HAProxy asks for each server's writer role; the reader role is asked every second, or at this
    #: interval when it is longer.
    check_interval_ms: int = 250
    reader_max_lag_s: float | None = None


def check_address(value: str, what: str) -> str:
    port = value.rsplit(":", 1)[-1]
    if not ADDRESS.match(value) or not 1 <= int(port) <= 65535:
        raise ValueError(f"{what}: {value!r} is not host:port")
    return value


def check_socket_path(value: str) -> str:
    """An admin socket: an absolute path (a unix socket), or host:port (a TCP socket, for a proxy Ferry reaches over
    a private network — a container's, say)."""
    if ADDRESS.match(value):
        return check_address(value, "admin_socket")
    if not SOCKET_PATH.match(value) or ".." in value.split("/"):
        raise ValueError(
            f"admin_socket: {value!r} is neither host:port nor an absolute path of letters, digits, '_', '.', '-', '/'"
        )
    return value


def socket_line(value: str) -> str:
    if value.startswith("/"):
        return f"    stats socket {value} mode 600 level admin"
    host, _, port = value.rpartition(":")
    family = "ipv6" if host.startswith("[") else "ipv4"
    return f"    stats socket {family}@{host.strip('[]')}:{port} level admin"


def render(cluster_id: int, cluster_name: str, servers: Sequence[ProxiedServer], layout: ProxyLayout) -> str:
    for value, what in ((layout.writer_bind, "writer_bind"), (layout.reader_bind, "reader_bind"),
                        (layout.ferry_address, "ferry_address")):  # fmt: skip
        check_address(value, what)
    check_socket_path(layout.admin_socket)
    for server in servers:
        check_address(server.address, f"the server with id {server.id}")
    api_host, _, api_port = layout.ferry_address.rpartition(":")
    api_host = api_host.strip("[]")
    writer, reader = writer_backend(cluster_id), reader_backend(cluster_id)
    lag = "" if layout.reader_max_lag_s is None else f"?max_lag_s={layout.reader_max_lag_s:g}"
    safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", cluster_name)[:100]

    def check(role: str, query: str = "") -> list[str]:
        return [
            "    option httpchk",
            f"    http-check send meth GET uri-lf /api/v1/roles/%[srv_name]/{role}{query} ver HTTP/1.1 "
            f'hdr Host {api_host} hdr Authorization "Bearer ${{{TOKEN_VARIABLE}}}"',
            "    http-check expect status 200",
        ]

    def server_lines(defaults: str) -> list[str]:
        lines = [f"    default-server check addr {api_host} port {api_port} {defaults}"]
        lines += [f"    server {server_name(s.id)} {s.address}  # {re.sub(r'[^ -~]', '?', s.name)[:80]}"
                  for s in servers]  # fmt: skip
        return lines

    interval = f"inter {layout.check_interval_ms}ms"
    reader_interval = f"inter {max(1000, layout.check_interval_ms)}ms"
    lines = [
        f"# HAProxy for Ferry's cluster {safe_name} (id {cluster_id}), rendered {datetime.now(UTC):%Y-%m-%d %H:%M}Z.",
        f"# The role checks need {TOKEN_VARIABLE} (a viewer API token) in HAProxy's environment.",
        "global",
        socket_line(layout.admin_socket),
        "",
        "defaults",
        "    mode tcp",
        "    timeout connect 3s",
        "    timeout client 1h",
        "    timeout server 1h",
        "    timeout check 2s",
        "",
        f"frontend {writer}",
        f"    bind {layout.writer_bind}",
        "    option socket-stats  # its address in `show stat`, for Ferry's view of the proxy",
        f"    default_backend {writer}",
        "",
        f"backend {writer}",
        "    # One server at a time: the writable master (Ferry moves it through the admin socket at once).",
        "    balance first",
        *check("writer"),
        *server_lines(f"{interval} fall 2 rise 1 on-marked-down shutdown-sessions"),
        "",
        f"frontend {reader}",
        f"    bind {layout.reader_bind}",
        "    option socket-stats",
        f"    default_backend {reader}",
        "",
        f"backend {reader}",
        "    balance roundrobin",
        *check("reader", lag),
        *server_lines(f"{reader_interval} fall 2 rise 2 on-marked-down shutdown-sessions"),
        "",
    ]
    return "\n".join(lines)
