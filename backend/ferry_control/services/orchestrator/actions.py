"""Node-level moves shared by the operations: bounded waits for positions (giving up early when the replication
that should get there has stopped), waiting for in-flight commits after read-only, promotion, repointing, leveling a
server with a peer by START … UNTIL, and checking that every server replicates from the master and converges."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ferry_control.core.gtid import GtidPosition
from ferry_control.drivers.base import ChangeMaster, ConnectionSettings, IoState, ServerDriver, SqlState
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation_results import SwitchesMaster
from ferry_control.services.orchestrator.gtid import level_plan, position
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import Link, ServerView

#: Longest single wait-for-position call; between calls the replication connection is looked at.
WAIT_SLICE_S = 1.0
#: How often a position is re-read while waiting for it to stand still.
QUIET_POLL_S = 0.01
#: How often connection states are re-read while waiting for them.
STATE_POLL_S = 0.05
#: How long a follower's applying is watched before it is judged too slow to converge within the wait.
LAG_MEASURE_S = 1.0


@dataclass(frozen=True)
class Reached:
    reached: bool
    position: str
    #: Why it gave up early (the replication stopped or failed), None otherwise.
    broken: str | None = None


async def connection_problem(driver: ServerDriver, connection: str) -> str | None:
    """Why the named connection cannot make progress, or None while it can."""
    for c in await driver.replica_connections():
        if c.name != connection:
            continue
        if c.last_error is not None:
            e = c.last_error
            return f"connection {connection!r} stopped on {e.side} error {e.code}: {e.message}"
        if not c.running and c.sql_state != SqlState.until_reached:
            return f"connection {connection!r} is stopped (io {c.io_state.value}, sql {c.sql_state.value})"
        return None
    return f"connection {connection!r} does not exist any more"


async def wait_reached(driver: ServerDriver, target: str, timeout_s: float, connection: str | None = None) -> Reached:
    """Waits until the server has reached `target` (bounded); when `connection` is named, gives up as soon as that
    connection has stopped or failed."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        left = deadline - time.monotonic()
        result = await driver.wait_for_position(target, max(min(left, WAIT_SLICE_S), 0.0))
        last = result.position
        if result.reached:
            return Reached(True, last)
        if connection is not None:
            problem = await connection_problem(driver, connection)
            if problem is not None:
                # It may have got there just before stopping.
                if position(last).is_ahead_of(position(target)):
                    return Reached(True, last)
                return Reached(False, last, problem)
        if time.monotonic() >= deadline:
            return Reached(False, last)


async def wait_quiet(driver: ServerDriver, quiet_s: float, max_s: float) -> tuple[str, bool]:
    """Reads the binlog position until it has not moved for `quiet_s` (commits admitted before read-only have
    landed, presumably: the fallback for servers whose driver cannot count commits in flight); returns it and
    whether it did settle within `max_s`."""
    deadline = time.monotonic() + max_s
    last = (await driver.positions()).binlog
    still_since = time.monotonic()
    while time.monotonic() - still_since < quiet_s:
        if time.monotonic() >= deadline:
            return last, False
        await asyncio.sleep(QUIET_POLL_S)
        now = (await driver.positions()).binlog
        if now != last:
            last, still_since = now, time.monotonic()
    return last, True


async def promote(driver: ServerDriver, connections: Sequence[str]) -> None:
    """Stops and removes the given replication connections, then lets clients write."""
    for name in connections:
        await driver.stop_replication(name)
        await driver.remove_replication(name)
    if await driver.set_read_only(False):
        raise DriverError("", "still_read_only", "the server still reports read_only after read-only off")


async def restart_connections(driver: ServerDriver, names: Sequence[str]) -> None:
    """Stops and starts each connection again. After a connection of a MariaDB 10.11 semi-sync replica was removed,
    its other connections were seen misreading their master's next event ("Event from master declares a length
    that does not match the packet", IO error 1595); a new start negotiates semi-sync again."""
    for name in names:
        await driver.stop_replication(name)
        await driver.start_replication(name)


async def repoint(
    driver: ServerDriver,
    connection: str,
    master_address: str,
    use_gtid: str = "slave_pos",
    *,
    stop_first: bool = True,
    settings: ConnectionSettings | None = None,
) -> None:
    """CHANGE MASTER of `connection` to `master_address` (stopping it first) and START. The connection keeps its
    own settings (delay, parallel apply, semi-sync role, filters, …): `settings` when given (a connection being
    re-created), else those the server reports of the existing connection (none: the server's defaults)."""
    if settings is None:
        settings = next((c.settings for c in await driver.replica_connections() if c.name == connection), None)
    if stop_first:
        await driver.stop_replication(connection)
    change = ChangeMaster(master_address=master_address, use_gtid=use_gtid, settings=settings)  # type: ignore[arg-type]
    await driver.change_master(connection, change)
    await driver.start_replication(connection)


async def ensure_connection(
    driver: ServerDriver, connection: str, master_address: str, settings: ConnectionSettings | None = None
) -> str | None:
    """Makes `connection` replicate from `master_address` (slave_pos) and run, each at most once: created (with
    `settings`) when missing or pointed elsewhere, started when stopped. Returns what it did, None when nothing."""
    found = next((c for c in await driver.replica_connections() if c.name == connection), None)
    if found is None or found.master_address != master_address:
        await repoint(driver, connection, master_address, "slave_pos", stop_first=found is not None, settings=settings)
        return f"replicates {connection!r} from {master_address}"
    if not found.running:
        await driver.start_replication(connection)
        return f"started {connection!r}"
    return None


async def connection_names(driver: ServerDriver) -> list[str]:
    return [c.name for c in await driver.replica_connections()]


#: Temporary connections a failover's leveling creates on its candidate (`level_<peer's server id>`).
LEVEL_PREFIX = "level_"


async def restore_connections(view: ServerView, running: Sequence[str], temp_prefix: str) -> str:
    """Puts a server's replication back as it was before a leveling: its temporary connections (`temp_prefix…`)
    removed, and the connections that were running started again. Returns what it did; raises OperationFailed
    naming what it could not do."""
    driver = view.require_driver()
    done: list[str] = []
    problems: list[str] = []
    try:
        current = {c.name: c for c in await driver.replica_connections()}
    except DriverError as e:
        # changed stays unknown: what the leveling before left on it cannot be read.
        raise OperationFailed(f"{view.info.label}: {e}", kind="server_error") from e
    for name in current:
        if name.startswith(temp_prefix):
            try:
                await driver.remove_replication(name)
                done.append(f"{view.info.label}: temporary connection {name!r} removed")
            except DriverError as e:
                problems.append(f"{view.info.label}: {e}")
    for name in running:
        connection = current.get(name)
        if connection is None or connection.running:
            continue
        try:
            await driver.start_replication(name)
            done.append(f"{view.info.label}: connection {name!r} started again")
        except DriverError as e:
            problems.append(f"{view.info.label}: {e}")
    if problems:
        raise OperationFailed("; ".join(problems), changed=True, left=problems)
    return "; ".join(done) or f"{view.info.label} replicates as before"


async def level_with(
    target: ServerView, peer: ServerView, temp_connection: str, timeout_s: float, exclude: Collection[int] = ()
) -> dict[str, str] | None:
    """Brings `target` level with `peer` in every domain where the peer is ahead but those of `exclude` (another
    master's domains, which the target gets from that master: never taken from the peer, nor moved): every
    connection of the target is stopped first — so its position, read then, stands still (a connection to another
    master applying between the read and the stop would have its domain moved back by the explicit positions) —, a
    temporary connection to the peer starts at an explicit position (the target's, capped at the peer's where the
    peer is behind) UNTIL the peer's GTIDs, the wait is bounded, then the temporary connection is removed and
    gtid_slave_pos set to the join of both (of the target's own, in the excluded domains) — also when the wait gave
    up, from where the target got to. The target's connections stay stopped (the caller restarts what it needs).
    Returns what was done, or None when the peer had nothing more."""
    assert target.status is not None and peer.status is not None and peer.info.protocol_address is not None
    driver = target.require_driver()
    for c in await driver.replica_connections():
        # Every one, running or not: one stopped by its UNTIL may still hold its IO side.
        await driver.stop_replication(c.name)
    before = position((await driver.positions()).current)
    plan = level_plan(before, position((await peer.require_driver().positions()).current), exclude)
    if plan is None:
        return None
    await driver.change_master(
        temp_connection, ChangeMaster(master_address=peer.info.protocol_address, position=plan.start)
    )
    await driver.start_replication(temp_connection, until=plan.until)
    reached = await wait_reached(driver, plan.until, timeout_s, connection=temp_connection)
    await driver.stop_replication(temp_connection)
    if not reached.reached:
        # The explicit start may have moved a domain back (capped at the peer's): the target's position is put
        # back to what it had, joined with what it got, before its connections start again.
        got = before.join(position((await driver.positions()).current))
        await driver.change_master(
            temp_connection, ChangeMaster(master_address=peer.info.protocol_address, position=str(got))
        )
        await driver.remove_replication(temp_connection)
        # Its other connections are the caller's to start again; the part of the leveling done stays.
        raise OperationFailed(
            f"{target.info.label} did not get level with {peer.info.label} (until {plan.until}) within "
            f"{timeout_s} s: it is at {reached.position}" + (f"; {reached.broken}" if reached.broken else ""),
            changed=True,
            left=[f"{target.info.label} leveled from {peer.info.label} part of the way: at {reached.position}"],
        )
    await driver.change_master(
        temp_connection, ChangeMaster(master_address=peer.info.protocol_address, position=plan.restored)
    )
    await driver.remove_replication(temp_connection)
    return {"peer": peer.info.label, "start": plan.start, "until": plan.until, "now": plan.restored}


async def wait_replicating_from(
    views: Sequence[ServerView],
    master_address: str,
    target: GtidPosition,
    timeout_s: float,
    *,
    received_only: Collection[int] = (),
    lagging: dict[int, str] | None = None,
) -> dict[int, str]:
    """Waits until each server has a running, connected connection to `master_address` without error and has
    reached `target` — received it, for the servers of `received_only` (delayed replicas: they apply it when their
    delay has passed); returns per server id what is still wrong (empty when all are fine).

    A server that has received `target` and applies (its position moved while waiting) but will not have applied all
    of it by the deadline at the rate it applies — a replica slower than the master's load — follows the new master:
    it is no problem, and goes into `lagging` (when given) with how far behind it is, as soon as that is known."""
    started = time.monotonic()
    deadline = started + timeout_s
    problems: dict[int, str] = {}
    first_applied: dict[int, tuple[float, GtidPosition]] = {}
    behind_but_receiving: dict[int, str] = {}
    pending = list(views)
    while pending:
        problems = {}
        still = []
        for view in pending:
            driver = view.require_driver()
            try:
                connections = [c for c in await driver.replica_connections() if c.master_address == master_address]
                ok = [
                    c for c in connections
                    if c.running and c.io_state == IoState.connected and c.last_error is None
                ]  # fmt: skip
                if not ok:
                    states = ", ".join(
                        f"{c.name}: io {c.io_state.value}, sql {c.sql_state.value}"
                        + (f", {c.last_error.code}" if c.last_error else "")
                        for c in connections
                    )
                    problems[view.info.id] = f"not replicating from {master_address} ({states or 'no connection'})"
                    still.append(view)
                    continue
                if view.info.id in received_only:
                    now = position(ok[0].received_position)
                    if not now.is_ahead_of(target):
                        problems[view.info.id] = f"received {now}, not yet {target} (delayed: applies it later)"
                        still.append(view)
                    continue
                now = position((await driver.positions()).binlog)
                if not now.is_ahead_of(target):
                    problems[view.info.id] = f"at {now}, not yet at {target}"
                    still.append(view)
                    seen_at, first = first_applied.setdefault(view.info.id, (time.monotonic(), now))
                    received = position(ok[0].received_position)
                    applied = sum(now.difference(first).values())
                    if received.is_ahead_of(target) and applied > 0:
                        behind = sum(target.difference(now).values())
                        rate = applied / max(time.monotonic() - seen_at, 1e-3)
                        behind_but_receiving[view.info.id] = (
                            f"received {target} and applying ({rate:,.0f} txn/s): {behind} transaction(s) behind it"
                        )
                        if time.monotonic() - seen_at >= LAG_MEASURE_S and behind / rate > deadline - time.monotonic():
                            problems.pop(view.info.id)
                            still.pop()
                            if lagging is not None:
                                lagging[view.info.id] = behind_but_receiving.pop(view.info.id)
                    else:
                        behind_but_receiving.pop(view.info.id, None)
            except DriverError as e:
                problems[view.info.id] = str(e)
                still.append(view)
        pending = still
        if not pending or time.monotonic() >= deadline:
            break
        await asyncio.sleep(STATE_POLL_S)
    for server_id, words in behind_but_receiving.items():
        if server_id in problems:
            del problems[server_id]
            if lagging is not None:
                lagging[server_id] = words
    return problems


def switch_result(ctx: OperationContext[Any, Any]) -> SwitchesMaster:
    """The result of an operation that moves a master role (a switchover's, a drill's), checked to be one."""
    result = ctx.result
    if not isinstance(result, SwitchesMaster):
        raise TypeError(f"operation {ctx.operation_id} ({ctx.type}) does not move a master role")
    return result


async def candidate_catch_up(
    ctx: OperationContext[Any, Any],
    candidate: ServerView,
    target: str,
    connection: str,
    *,
    timeout_s: float | None = None,
) -> None:
    """The `candidate_catch_up` step of a switchover: the candidate applies up to `target` over `connection`
    within `timeout_s` (default `switchover_catch_up_timeout_s`; its time kept as `catch_up_s`), else the operation
    fails naming where it is and why (the connection broke, or the time ran out)."""
    result = switch_result(ctx)
    timeout_s = timeout_s or ctx.settings.operations.switchover_catch_up_timeout_s
    async with ctx.step("candidate_catch_up") as step:
        caught = time.perf_counter()
        reached = await wait_reached(candidate.require_driver(), target, timeout_s, connection=connection)
        result.catch_up_s = caught_s = round(time.perf_counter() - caught, 6)
        if not reached.reached:
            why = reached.broken or f"timed out after {timeout_s} s"
            raise OperationFailed(f"{candidate.info.label} did not reach {target} (it is at {reached.position}): {why}")
        step.detail = f"{candidate.info.label} reached {target} in {caught_s:.3f} s"


async def drain_relay_logs(candidates: Sequence[Link], timeout_s: float) -> dict[str, str]:
    """A failover's (and a hub failover's) wait before its candidate is chosen: each candidate applies what it
    received from the lost source (a stopped connection has no relay log to apply: it discards it at the next start).
    One that does not within `timeout_s` ends the failover (no server was changed yet): the choice compares what the
    candidates applied, so one still applying could be passed over, or its peers' writes lost. Returns each waited
    for candidate's position by label."""
    drained: dict[str, str] = {}
    for link in candidates:
        if not link.connection.running or not link.connection.received_position:
            continue
        reached = await wait_reached(link.replica.require_driver(), link.connection.received_position, timeout_s)
        if not reached.reached:
            raise OperationFailed(
                f"{link.replica.info.label} did not apply what it received ({link.connection.received_position}) "
                f"within {timeout_s} s: it is at {reached.position}",
                changed=False,  # waited only: no server was changed yet
            )
        drained[link.replica.info.label] = reached.position
    return drained
