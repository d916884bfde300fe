"""How a server is named to an operator, in one place: every message, operation step, audit row and CLI line says
`server_label(...)`, so the same server reads the same everywhere.

The name is the server's registered name — the operator's, or, for a discovered server, what it advertises
(`report_host:report_port`, else the host and port it was seen at) — and MariaDB's own `server_id` stands beside
it, the number an operator knows the server by (`db-3 (server_id 3)`). The control plane's row ids are another
numbering that collides with it: they appear only where an API needs them, and then as `internal_id(...)` ("id 10"),
never as a bare "server 10"."""

from __future__ import annotations

#: What stands for the server_id of a server not read yet (never polled successfully).
UNKNOWN_SERVER_ID = "not read yet"


def server_label(name: str, server_id: int | None) -> str:
    """`name (server_id N)`: a server as every message names it; `server_id` as the server reports it."""
    return f"{name} (server_id {UNKNOWN_SERVER_ID if server_id is None else server_id})"


def internal_id(row_id: int) -> str:
    """The control plane's id of a server (what the API's `server_id` parameters take), labelled as such."""
    return f"id {row_id}"


def unknown_server(row_id: int) -> str:
    """A server known by its control plane id only (not registered in the cluster, or no longer)."""
    return f"the server with {internal_id(row_id)}"


def connection_label(name: str) -> str:
    """A replication connection as every plan and preview names it: `'m1'`, or `(default connection)` for MariaDB's
    unnamed one (`''`, which quoted reads as nothing)."""
    return repr(name) if name else "(default connection)"
