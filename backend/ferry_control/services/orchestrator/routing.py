"""Where applications' writes go while an operation moves a cluster's master: called by the switchover and failover
at the two moments that matter.

- `writer_leaving(ctx, old)`, just before the old master is made read-only: every proxy
  (`haproxy_admin_sockets`) drains it (no new writer connection goes to it), and its read-only flag is recorded
  at once, so its writer role check (services/roles.py) fails from that moment instead of at the next poll.
- `writer_arrived(ctx, new, old)`, right after the new master is writable: its writability is recorded, every proxy
  puts it in service (ready, and up without waiting for its checks) and ends the sessions still open on the old
  master, so applications reconnect to the new one.

A proxy that does not answer within `haproxy_timeout_s` does not fail the operation: the operation's result lists
every proxy's outcome (`proxies`), and a proxy that missed a move is remembered (`StaleProxies`) and brought in line
after the next collector cycle it answers (`ProxySync`). The recording runs beside the operation (it never
lengthens the write window); the proxies' commands are awaited, each bounded."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.operation_results import ProxyOutcome
from ferry_control.services.haproxy import runtime
from ferry_control.services.roles import RoleService

log = logging.getLogger(__name__)

#: Recordings still being written (kept referenced until they end).
_recordings: set[asyncio.Task[None]] = set()


class StaleProxies:
    """The (proxy, cluster) pairs whose last move a proxy missed."""

    def __init__(self) -> None:
        self.pairs: set[tuple[str, int]] = set()


async def writer_leaving(ctx: Any, server_id: int) -> None:
    _record(ctx.sessionmaker, ctx.cluster_id, server_id, read_only=True)
    await _tell(ctx, runtime.drain_writer(ctx.cluster_id, server_id))


async def writer_arrived(ctx: Any, server_id: int, previous_id: int | None) -> None:
    _record(ctx.sessionmaker, ctx.cluster_id, server_id, read_only=False, no_longer_from=previous_id)
    commands = runtime.make_writer(ctx.cluster_id, server_id)
    if previous_id is not None:
        commands.append(f"shutdown sessions server {runtime.writer_backend(ctx.cluster_id)}/"
                        f"{runtime.server_name(previous_id)}")  # fmt: skip
    await _tell(ctx, commands)


def _record(
    sessionmaker: async_sessionmaker[AsyncSession], cluster_id: int, server_id: int, read_only: bool,
    no_longer_from: int | None = None,
) -> None:  # fmt: skip
    """The server's read-only flag as the operation set it; with `no_longer_from`, its connection to that server
    recorded as stopped (the promotion removed it), so its writer check passes before the next poll."""
    at = datetime.now(UTC)

    async def write() -> None:
        try:
            async with session_scope(sessionmaker) as session:
                await ServerRepository(session).record_read_only(cluster_id, server_id, read_only, at)
                if no_longer_from is not None:
                    await LinkRepository(session).record_stopped(cluster_id, server_id, no_longer_from)
        except Exception:
            log.warning("could not record read_only=%s of the server with id %s (the next poll will)",
                        read_only, server_id, exc_info=True)  # fmt: skip

    task = asyncio.get_running_loop().create_task(write())
    _recordings.add(task)
    task.add_done_callback(_recordings.discard)


async def _tell(ctx: Any, commands: list[str]) -> None:
    settings: Settings = ctx.settings
    proxies = settings.proxies.haproxy_admin_sockets
    if not proxies:
        return
    outcomes = await runtime.send_all(proxies, commands, settings.proxies.haproxy_timeout_s)
    reported = ctx.result.proxy_outcomes()
    stale: StaleProxies = ctx.runner.stale_proxies
    for outcome in outcomes:
        if outcome.skipped:  # not in front of this cluster
            continue
        reported.append(ProxyOutcome(proxy=outcome.proxy, commands=commands, ok=outcome.ok, error=outcome.error))
        if outcome.ok:
            stale.pairs.discard((outcome.proxy, ctx.cluster_id))
        else:
            stale.pairs.add((outcome.proxy, ctx.cluster_id))
            log.warning("proxy %s missed a move of cluster %s's writer: %s", outcome.proxy, ctx.cluster_id,
                        outcome.error)  # fmt: skip


class ProxySync:
    """After each collector cycle: every proxy that missed a move is told the cluster's writer as the control plane
    knows it now (the one server passing the writer role check in service, the others drained), skipped while an
    operation holds the cluster (it moves the writer itself)."""

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], settings: Settings, stale: StaleProxies):
        self._sessionmaker = sessionmaker
        self._settings = settings
        self._stale = stale

    async def __call__(self, clusters: set[int] | None = None) -> None:
        for proxy, cluster_id in sorted(self._stale.pairs):
            if clusters is not None and cluster_id not in clusters:
                continue
            commands = await self._commands(cluster_id)
            if commands is None:
                continue
            outcome = await runtime.send(proxy, commands, self._settings.proxies.haproxy_timeout_s)
            if outcome.ok:
                self._stale.pairs.discard((proxy, cluster_id))
                log.info("proxy %s brought in line with cluster %s's writer", proxy, cluster_id)

    async def _commands(self, cluster_id: int) -> list[str] | None:
        async with session_scope(self._sessionmaker) as session:
            if await _operation_running(session, cluster_id):
                return None
            roles = RoleService(session)
            commands: list[str] = []
            for server in await ServerRepository(session).list_for_cluster(cluster_id):
                if (await roles.writer(server.id)).ok:
                    commands += runtime.make_writer(cluster_id, server.id)
                else:
                    commands += runtime.drain_writer(cluster_id, server.id)
            return commands


async def _operation_running(session: AsyncSession, cluster_id: int) -> bool:
    lock = await ClusterRepository(session).lock_state(cluster_id)
    return lock is not None and lock.operation_id is not None
