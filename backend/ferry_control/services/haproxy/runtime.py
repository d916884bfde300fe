"""HAProxy's runtime API (its admin socket: `stats socket … level admin`), as Ferry uses it to move a cluster's
writer at once during a switchover or failover instead of waiting for health checks.

A proxy is named by the operator in settings (`haproxy_admin_sockets`: a unix socket path, or `host:port` for a TCP
socket) — never by an API caller. Each call opens a connection, sends its commands on one line (`;`-separated, as
the runtime API takes them), reads the answer until the proxy closes, within `timeout_s`; the answer's lines that
are not empty are errors (HAProxy answers a successful `set server` with nothing)."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

#: Most bytes of an answer read (a `set server` answer is empty; an error is one line).
ANSWER_BYTES_MAX = 64 * 1024
#: Most bytes of a `show stat` answer read (a few hundred bytes a server).
STAT_BYTES_MAX = 4 * 1024 * 1024


#: The runtime API's answer for a backend the proxy does not have: a proxy in front of other clusters.
NO_SUCH_BACKEND = "No such backend."


@dataclass(frozen=True)
class ProxyOutcome:
    """What one proxy made of the commands: `error` None when every command was taken; `skipped` when the proxy
    is not in front of the cluster (it has none of its backends)."""

    proxy: str
    commands: int
    error: str | None = None
    skipped: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def writer_backend(cluster_id: int) -> str:
    return f"ferry_{cluster_id}_writer"


def reader_backend(cluster_id: int) -> str:
    return f"ferry_{cluster_id}_reader"


def server_name(server_id: int) -> str:
    return f"s{server_id}"


async def _exchange(proxy: str, line: str, limit: int, timeout_s: float) -> bytes:
    """Sends one command line to the proxy's admin socket and reads the answer until it closes the connection;
    raises OSError, ValueError (a malformed address) or TimeoutError."""
    async with asyncio.timeout(timeout_s):
        if proxy.startswith("/"):
            reader, writer = await asyncio.open_unix_connection(proxy)
        else:
            host, _, port = proxy.rpartition(":")
            reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
        try:
            writer.write(line.encode() + b"\n")
            await writer.drain()
            return await _read_all(reader, limit)
        finally:
            writer.close()


async def send(proxy: str, commands: Sequence[str], timeout_s: float) -> ProxyOutcome:
    """Sends `commands` to the proxy's admin socket; never raises for the proxy's sake."""
    if not commands:
        return ProxyOutcome(proxy, 0)
    try:
        answer = await _exchange(proxy, "; ".join(commands), ANSWER_BYTES_MAX, timeout_s)
    except TimeoutError:
        return ProxyOutcome(proxy, len(commands), f"no answer within {timeout_s:g} s")
    except (OSError, ValueError) as e:
        return ProxyOutcome(proxy, len(commands), f"cannot reach the admin socket: {e}")
    errors = [line.strip() for line in answer.decode(errors="replace").splitlines() if line.strip()]
    if errors and all(e == NO_SUCH_BACKEND for e in errors):
        return ProxyOutcome(proxy, len(commands), skipped=True)
    return ProxyOutcome(proxy, len(commands), "; ".join(errors)[:500] if errors else None)


async def stat(proxy: str, timeout_s: float) -> list[dict[str, str]]:
    """`show stat` as rows (pxname, svname, status, addr, type, …); raises OSError, ValueError or TimeoutError."""
    answer = await _exchange(proxy, "show stat", STAT_BYTES_MAX, timeout_s)
    return list(csv.DictReader(io.StringIO(answer.decode(errors="replace").lstrip("# "))))


async def _read_all(reader: asyncio.StreamReader, limit: int) -> bytes:
    """The answer until the proxy closes the connection (it does after one command line), at most `limit` bytes."""
    chunks, size = [], 0
    while size < limit and (chunk := await reader.read(min(65536, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


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
