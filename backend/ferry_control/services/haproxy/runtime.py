"""HAProxy's runtime API (its admin socket: `stats socket … level admin`), as Ferry uses it to move a cluster's
writer at once during a switchover or failover instead of waiting for health checks.

A proxy is named by the operator in settings (`haproxy_admin_sockets`: a unix socket path, or `host:port` for a TCP
socket) — never by an API caller. Each call opens a connection, sends its commands on one line (`;`-separated, as
the runtime API takes them), reads the answer until the proxy closes, within `timeout_s`; the answer's lines that
are not empty are errors (HAProxy answers a successful `set server` with nothing)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

#: Most bytes of an answer read (a `set server` answer is empty; an error is one line).
ANSWER_BYTES_MAX = 64 * 1024


@dataclass(frozen=True)
class ProxyOutcome:
    """What one proxy made of the commands: `error` None when every command was taken."""

    proxy: str
    commands: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def writer_backend(cluster_id: int) -> str:
    return f"ferry_{cluster_id}_writer"


def reader_backend(cluster_id: int) -> str:
    return f"ferry_{cluster_id}_reader"


def server_name(server_id: int) -> str:
    return f"s{server_id}"


async def send(proxy: str, commands: Sequence[str], timeout_s: float) -> ProxyOutcome:
    """Sends `commands` to the proxy's admin socket; never raises for the proxy's sake."""
    if not commands:
        return ProxyOutcome(proxy, 0)
    try:
        async with asyncio.timeout(timeout_s):
            if proxy.startswith("/"):
                reader, writer = await asyncio.open_unix_connection(proxy)
            else:
                host, _, port = proxy.rpartition(":")
                reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
            try:
                writer.write(("; ".join(commands) + "\n").encode())
                await writer.drain()
                answer = await reader.read(ANSWER_BYTES_MAX)
            finally:
                writer.close()
    except TimeoutError:
        return ProxyOutcome(proxy, len(commands), f"no answer within {timeout_s:g} s")
    except (OSError, ValueError) as e:
        return ProxyOutcome(proxy, len(commands), f"cannot reach the admin socket: {e}")
    errors = [line.strip() for line in answer.decode(errors="replace").splitlines() if line.strip()]
    return ProxyOutcome(proxy, len(commands), "; ".join(errors)[:500] if errors else None)


async def send_all(proxies: Sequence[str], commands: Sequence[str], timeout_s: float) -> list[ProxyOutcome]:
    """The same commands to every proxy at once."""
    return list(await asyncio.gather(*(send(p, commands, timeout_s) for p in proxies)))


def make_writer(cluster_id: int, server_id: int) -> list[str]:
    """The server takes the cluster's writer traffic now: ready, and up without waiting for its checks."""
    target = f"{writer_backend(cluster_id)}/{server_name(server_id)}"
    return [f"set server {target} state ready", f"set server {target} health up"]


def drain_writer(cluster_id: int, server_id: int) -> list[str]:
    """The server takes no new writer connections (those open go on until its checks mark it down)."""
    return [f"set server {writer_backend(cluster_id)}/{server_name(server_id)} state drain"]
