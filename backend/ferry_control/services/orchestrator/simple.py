"""The one-server operations: read-only on/off, start and stop replication (optionally START … UNTIL), repoint a
replica to another master, and bring a server level with another (START … UNTIL its position, then wait). Each runs
a preflight (the servers answer, the connection exists, no replication loop, a fenced server is not made writable),
then its moves, then checks the outcome. A repoint works in any shape: it refuses a move that would make a loop
(directly or through other servers) or leave the server without a domain it receives today, and a new master
behind the server in some domain is leveled from it first (START … UNTIL over a temporary connection) when it is
read-only, else refused naming the domains and the GTIDs."""

from __future__ import annotations

import asyncio
import time

from ferry_control.core.db import session_scope
from ferry_control.core.naming import unknown_server
from ferry_control.drivers.base import IoState, SqlState
from ferry_control.drivers.errors import DriverError
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.operation import (
    BringLevelParams,
    ReadOnlyParams,
    RepointParams,
    StartReplicationParams,
    StopReplicationParams,
)
from ferry_control.schemas.operation_results import (
    BringLevelResult,
    ReadOnlyResult,
    RepointResult,
    StartReplicationResult,
    StopReplicationResult,
)
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView

#: How long a started connection may take to connect before the operation says it did not.
CONNECT_WAIT_S = 10.0


def _reachable(snapshot: ClusterSnapshot, server_id: int, role: str) -> ServerView:
    """The server of a preflight, refused unless it is in the cluster and answers."""
    view = snapshot.by_id.get(server_id)
    if view is None:
        raise refused(f"{role}, {unknown_server(server_id)}, is not in cluster {snapshot.cluster_id} any more")
    if not view.reachable:
        raise refused(f"{role} {view.info.label} cannot be reached: {view.error}")
    return view


def _connection(view: ServerView, name: str | None, default: str) -> str:
    """The named connection, else the server's only one, else the default name."""
    assert view.status is not None
    if name is not None:
        return name
    names = [c.name for c in view.status.connections]
    return names[0] if len(names) == 1 else default


async def run_read_only(ctx: OperationContext[ReadOnlyParams, ReadOnlyResult]) -> None:
    wanted = ctx.params.read_only
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        view = _reachable(snapshot, ctx.params.registered_server_id, "the")
        if not wanted and view.info.fenced:
            raise refused(
                f"{view.info.label} is fenced (it was replaced by a failover): repoint it, or unfence it first"
            )
        step.detail = f"{view.info.label} read_only={view.status.read_only if view.status else None}"
    if ctx.dry_run:
        return
    await ctx.pre_hooks()
    async with ctx.step("set_read_only") as step:
        assert view.status is not None
        before = view.status.read_only
        now = await view.require_driver().set_read_only(wanted)
        if now != wanted:
            # It answered with its flag: left changed when that is not what the preflight read.
            raise OperationFailed(
                f"{view.info.label} reports read_only={now} after asking for {wanted}",
                changed=now != before,
                left=[f"{view.info.label} read_only={now} (it was {before})"] if now != before else [],
            )
        step.detail = f"{view.info.label} read_only={now}"
    ctx.result.registered_server_id, ctx.result.read_only = view.info.id, wanted


async def _existing_connection(
    ctx: OperationContext[StartReplicationParams, StartReplicationResult]
    | OperationContext[StopReplicationParams, StopReplicationResult],
) -> tuple[ServerView, str]:
    """The preflight of start / stop replication: the server answers and has the named connection."""
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        view = _reachable(snapshot, ctx.params.registered_server_id, "the")
        name = _connection(view, ctx.params.connection, ctx.settings.operations.replication_connection_name)
        assert view.status is not None
        if not any(c.name == name for c in view.status.connections):
            raise refused(f"{view.info.label} has no replication connection {name!r}")
        step.detail = f"{view.info.label} connection {name!r}"
    return view, name


async def run_start_replication(ctx: OperationContext[StartReplicationParams, StartReplicationResult]) -> None:
    view, name = await _existing_connection(ctx)
    if ctx.dry_run:
        return
    await ctx.pre_hooks()
    until = ctx.params.until
    async with ctx.step("start") as step:
        await view.require_driver().start_replication(name, until=until)
        step.detail = f"started {name!r}" + (f" until {until}" if until else "")
    async with ctx.step("verify") as step:
        done = f"connection {name!r} started" + (f" until {until}" if until else "")
        step.detail = await _wait_started(view, name, until is not None, done)
    ctx.result.registered_server_id, ctx.result.connection, ctx.result.until = view.info.id, name, until


async def _wait_started(view: ServerView, name: str, until: bool, done: str) -> str:
    """Waits (bounded) until the connection that was `done` (its server changed: started, or repointed) connects,
    or reaches its UNTIL; else fails saying how the server is left."""
    driver = view.require_driver()
    deadline = time.monotonic() + CONNECT_WAIT_S
    while True:
        connection = next((c for c in await driver.replica_connections() if c.name == name), None)
        if connection is None:
            raise OperationFailed(
                f"{view.info.label}: connection {name!r} disappeared",
                changed=True,
                left=[f"{view.info.label}: {done}, then it disappeared"],
            )
        if connection.last_error is not None:
            e = connection.last_error
            raise OperationFailed(
                f"{view.info.label}: connection {name!r} stopped on {e.side} error {e.code}: {e.message}",
                changed=True,
                left=[f"{view.info.label}: {done}; it stopped on {e.side} error {e.code}"],
            )
        if connection.io_state == IoState.connected or (until and connection.sql_state == SqlState.until_reached):
            return f"{name!r}: io {connection.io_state.value}, sql {connection.sql_state.value}"
        if time.monotonic() >= deadline:
            raise OperationFailed(
                f"{view.info.label}: connection {name!r} did not connect within {CONNECT_WAIT_S} s "
                f"(io {connection.io_state.value})",
                changed=True,
                left=[f"{view.info.label}: {done}; not connected (io {connection.io_state.value})"],
            )
        await asyncio.sleep(actions.STATE_POLL_S)


async def run_stop_replication(ctx: OperationContext[StopReplicationParams, StopReplicationResult]) -> None:
    view, name = await _existing_connection(ctx)
    if ctx.dry_run:
        return
    await ctx.pre_hooks()
    async with ctx.step("stop") as step:
        await view.require_driver().stop_replication(name)
        step.detail = f"stopped {name!r}"
    ctx.result.registered_server_id, ctx.result.connection = view.info.id, name


async def run_repoint(ctx: OperationContext[RepointParams, RepointResult]) -> None:
    use_gtid = ctx.params.use_gtid
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        view = _reachable(snapshot, ctx.params.registered_server_id, "the replica")
        master = _reachable(snapshot, ctx.params.master_registered_server_id, "the new master")
        if master.info.protocol_address is None:
            raise refused(f"{master.info.label} has no protocol port recorded")
        loop = [link for link in snapshot.links_of(master.info.id) if link.master.info.id == view.info.id]
        if loop:
            raise refused(
                f"{master.info.label} replicates from {view.info.label} (connection {loop[0].connection.name!r}): "
                "repointing would make a replication loop"
            )
        if view.info.id in upstream(snapshot, master.info.id):
            raise refused(
                f"{master.info.label} replicates from {view.info.label} through other servers: repointing would make "
                "a replication loop"
            )
        name = _connection(view, ctx.params.connection, ctx.settings.operations.replication_connection_name)
        if dropped := dropped_domains(snapshot, view, name, master):
            raise refused(
                f"{view.info.label} would no longer receive domain(s) {', '.join(map(str, dropped))}: "
                f"{master.info.label} does not have them and no other connection of {view.info.label} brings them"
            )
        ahead = view.current.difference(master.current) if use_gtid == "slave_pos" else {}
        level_first = False
        if ahead:
            gtids = ", ".join(f"{g.domain}-{g.server}-{g.seq}" for g in view.current if g.domain in ahead)
            have = ", ".join(f"{g.domain}-{g.server}-{g.seq}" for g in master.current if g.domain in ahead) or "none"
            domains = ", ".join(map(str, sorted(ahead)))
            if master.status is None or not master.status.read_only:
                raise refused(
                    f"{master.info.label} is behind {view.info.label} in domain(s) {domains} "
                    f"({view.info.label} has {gtids}; {master.info.label} has {have}) and takes writes, so it cannot "
                    "be leveled from its new replica: bring it level first, or choose a server that has them"
                )
            level_first = True
        step.detail = f"{view.info.label} connection {name!r} → {master.info.label} ({use_gtid})" + (
            f"; {master.info.label} is first leveled from {view.info.label} in domain(s) "
            f"{', '.join(map(str, sorted(ahead)))}"
            if level_first
            else ""
        )
    if ctx.dry_run:
        return
    await ctx.pre_hooks()
    if level_first:
        async with ctx.step("level_new_master") as step:
            assert master.status is not None
            running = [c.name for c in master.status.connections if c.running]
            try:
                step.detail = await actions.level_with(
                    master, view, f"{actions.LEVEL_PREFIX}{view.info.id}",
                    ctx.settings.operations.switchover_catch_up_timeout_s,
                )  # fmt: skip
            finally:  # what the new master replicated before goes on
                await actions.restore_connections(master, running, actions.LEVEL_PREFIX)
    async with ctx.step("repoint") as step:
        assert view.status is not None
        exists = any(c.name == name for c in view.status.connections)
        await actions.repoint(view.require_driver(), name, master.info.protocol_address, use_gtid, stop_first=exists)
        step.detail = f"{view.info.label} replicates from {master.info.protocol_address} over {name!r}"
    async with ctx.step("verify") as step:
        step.detail = await _wait_started(view, name, False, f"connection {name!r} repointed to {master.info.label}")
    if view.info.fenced:
        async with ctx.step("unfence") as step:
            async with session_scope(ctx.sessionmaker) as session:
                server = await ServerRepository(session).get(ctx.cluster_id, view.info.id)
                if server is not None:
                    server.fenced, server.fenced_at, server.fence_reason = False, None, None
            step.detail = f"{view.info.label} is a replica again; no longer fenced"
    ctx.result.registered_server_id, ctx.result.master_registered_server_id, ctx.result.connection = (
        view.info.id,
        master.info.id,
        name,
    )


def upstream(snapshot: ClusterSnapshot, server_id: int) -> set[int]:
    """Every server `server_id` replicates from, directly or through others."""
    found: set[int] = set()
    pending = [server_id]
    while pending:
        for link in snapshot.links_of(pending.pop()):
            if link.master.info.id not in found:
                found.add(link.master.info.id)
                pending.append(link.master.info.id)
    return found


def dropped_domains(snapshot: ClusterSnapshot, view: ServerView, name: str, master: ServerView) -> list[int]:
    """The domains `view` receives today over connection `name` only that `master` cannot send it: its old master
    has them, the new one has none of them, and no other connection of `view` brings them."""
    assert view.status is not None
    old = next((c for c in view.status.connections if c.name == name), None)
    old_master = snapshot.master_of(old) if old is not None else None
    if old_master is None or old_master.status is None or master.status is None:
        return []
    others = set()
    for link in snapshot.links_of(view.info.id):
        if link.connection.name != name and link.master.status is not None:
            others |= set(link.master.binlog.domains())
    return sorted(set(old_master.binlog.domains()) - set(master.binlog.domains()) - others)


async def run_bring_level(ctx: OperationContext[BringLevelParams, BringLevelResult]) -> None:
    timeout_s = ctx.params.timeout_s or ctx.settings.operations.switchover_catch_up_timeout_s
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        view = _reachable(snapshot, ctx.params.registered_server_id, "the")
        source = _reachable(snapshot, ctx.params.source_registered_server_id, "the source")
        if source.info.protocol_address is None:
            raise refused(f"{source.info.label} has no protocol port recorded")
        behind = source.current.difference(view.current)
        step.detail = f"{view.info.label} at {view.current}; {source.info.label} at {source.current}; behind in " + (
            ", ".join(f"domain {d} by {n}" for d, n in sorted(behind.items())) or "no domain"
        )
    ctx.result.registered_server_id, ctx.result.source_registered_server_id = view.info.id, source.info.id
    ctx.result.target = str(source.current)
    if ctx.dry_run:
        return
    if not behind:
        async with ctx.step("level") as step:
            step.skipped = True
            step.detail = f"{view.info.label} already has everything {source.info.label} has"
        return
    await ctx.pre_hooks()
    assert view.status is not None
    direct = [link for link in snapshot.links_of(view.info.id) if link.master.info.id == source.info.id]
    running = [c.name for c in view.status.connections if c.running]
    driver = view.require_driver()
    async with ctx.step("level") as step:
        started = time.perf_counter()
        not_restarted: list[str] = []
        try:
            try:
                if direct:
                    name = direct[0].connection.name
                    until = str(position(",".join(f"{g.domain}-{g.server}-{g.seq}" for g in source.current
                                                  if g.domain in behind)))  # fmt: skip
                    await driver.stop_replication(name)
                    await driver.start_replication(name, until=until)
                    reached = await actions.wait_reached(driver, until, timeout_s, connection=name)
                    if not reached.reached:
                        # One that ran is started again below, as before; one that was stopped is left started.
                        was_stopped = name not in running
                        left = f"{view.info.label}: connection {name!r} started until {until} (it was stopped)"
                        raise OperationFailed(
                            f"{view.info.label} did not reach {until} within {timeout_s} s (it is at "
                            f"{reached.position})" + (f": {reached.broken}" if reached.broken else ""),
                            changed=was_stopped,
                            left=[left] if was_stopped else [],
                        )
                    step.detail = {"connection": name, "until": until}
                else:
                    step.detail = await actions.level_with(view, source, f"level_{source.info.id}", timeout_s)
            except DriverError as e:
                # changed stays unknown: the error may have come from any of its stops, starts or leveling moves.
                raise OperationFailed(f"{e.address}: {e.code}: {e.message}", kind="server_error") from e
            finally:
                for name in running:  # what was replicating before goes on replicating
                    try:
                        await driver.stop_replication(name)
                        await driver.start_replication(name)
                    except DriverError as error:
                        not_restarted.append(f"{view.info.label}: connection {name!r} not started again ({error.code})")
        except OperationFailed as failed:
            if not not_restarted:
                raise
            raise OperationFailed(
                f"{failed.message}; " + "; ".join(not_restarted),
                kind=failed.kind,
                changed=True,
                left=[*failed.left, *not_restarted],
            ) from failed
        ctx.result.level_s = round(time.perf_counter() - started, 6)
