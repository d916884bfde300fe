"""Fencing a replaced source: marked `fenced` in the database (the failover monitor keeps it read-only whenever it
answers and is writable; it is never repointed automatically) and made read-only now if it answers; and the
suspension of automatic failover a failover leaves until an operator acknowledges it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.drivers.errors import DriverError
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.services.orchestrator.moves import MoveContext
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ServerView


async def record_fence(ctx: MoveContext, master: ServerView, reason: str) -> None:
    """Marks the replaced source fenced in the database, before anything else is made writable in its place: from
    then on, whatever ends the operation (an error, a roll forward, a crash and the reconcile's completion), the
    failover monitor keeps it read-only whenever it answers."""
    async with session_scope(ctx.sessionmaker) as session:
        server = await ServerRepository(session).get(ctx.cluster_id, master.info.id)
        if server is not None and not server.fenced:
            server.fenced, server.fenced_at, server.fence_reason = True, datetime.now(UTC), reason


async def fence(ctx: MoveContext, master: ServerView, reason: str) -> None:
    """`record_fence`, and the source made read-only now if it answers."""
    await record_fence(ctx, master, reason)
    if master.driver is not None:
        try:
            await master.driver.set_read_only(True)
        except DriverError:
            pass  # it is down; the failover monitor makes it read-only when it answers again


async def suspend_automatic_failover(ctx: OperationContext[Any, Any]) -> None:
    async with session_scope(ctx.sessionmaker) as session:
        cluster = await ClusterRepository(session).get(ctx.cluster_id)
        if cluster is not None:
            now = datetime.now(UTC)
            cluster.failover_suspended_at = now
            cluster.last_failover_at = now
            cluster.last_failover_operation_id = ctx.operation_id
