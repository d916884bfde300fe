"""What a reconcile does to the servers per kind of operation left by a dead API instance (reconcile.py says when):
a switchover's or a drill's move undone or completed, a failover's completed or its leveling removed. Each kind's
function is named by its declaration (kinds.py); the one-server operations have none (examined only). Each says what
it did in words (`done`, `problems`) and typed (a `RepairVerdict`: the operation's `result.failure` is made of it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation_results import (
    FailoverResult,
    HubSwitchPlan,
    OperationResult,
    SwitchesMaster,
)
from ferry_control.services.orchestrator import no_return, routing
from ferry_control.services.orchestrator.actions import LEVEL_PREFIX
from ferry_control.services.orchestrator.failures import RepairVerdict
from ferry_control.services.orchestrator.hub_failover import complete_hub_failover
from ferry_control.services.orchestrator.hub_switchover import complete_hub_move, undo_hub_move
from ferry_control.services.orchestrator.runner import OperationFailed, OperationRunner
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView
from ferry_control.services.orchestrator.switchover import complete_move, put_back_servers


@dataclass(frozen=True)
class RepairContext:
    """What a repair needs of the reconciler besides the servers."""

    sessionmaker: async_sessionmaker[AsyncSession]
    settings: Settings
    runner: OperationRunner


@dataclass(frozen=True)
class _Routing:
    """What `routing` needs of an operation, for a reconcile that puts a writer back in service on the proxies."""

    sessionmaker: async_sessionmaker[AsyncSession]
    cluster_id: int
    settings: Settings
    result: SwitchesMaster
    runner: OperationRunner


async def repair_switch(
    ctx: RepairContext, snapshot: ClusterSnapshot, result: OperationResult, done: list[str], problems: list[str]
) -> RepairVerdict:
    """A switchover's or a drill's (`SwitchesMaster`): undone while the candidate took no write, else completed."""
    assert isinstance(result, SwitchesMaster)
    if result.hub_switch is not None:
        return await _repair_hub_switch(snapshot, result.hub_switch, done, problems)
    switch = result.switch
    if switch is None:
        done.append("it stopped before changing any server: nothing to undo")
        return "unchanged"
    old = snapshot.by_id.get(switch.old_master_registered_server_id)
    new = snapshot.by_id.get(switch.new_master_registered_server_id)
    name = switch.connection
    if old is None or new is None:
        problems.append("the old master or the candidate is no longer registered")
        return "unknown"
    if not new.reachable:
        problems.append(
            f"{new.info.label} (the candidate) cannot be reached ({new.error}): whether it was promoted is "
            f"unknown, so {old.info.label} is left as it is"
        )
        return "unknown"
    assert new.status is not None
    # The same rule as a live stop (no_return.decide): completed once the candidate's connection to the old master
    # is gone or it took writes, else undone.
    try:
        verdict = await no_return.decide(new, old, name, result.position)
    except no_return.Undecidable as e:
        problems.append(f"{e}: whether it took writes as the master is unknown; the servers are left as they are")
        return "unknown"
    done.append(verdict.detail)
    if not verdict.complete:
        connection = next(c for c in new.status.connections if c.name == name)
        put = await put_back_servers(
            old, new, connection,
            master_was_read_only=switch.old_master_was_read_only,
            candidate_was_read_only=switch.candidate_was_read_only,
        )  # fmt: skip
        failed = put.problems
        if not failed:
            was = "read-only as before" if switch.old_master_was_read_only else "writable again"
            done.append(f"undone: {old.info.label} {was}, {new.info.label} replicates from it as before")
        problems.extend(failed)
        if not switch.old_master_was_read_only and not failed:
            await routing.writer_arrived(
                _Routing(ctx.sessionmaker, snapshot.cluster_id, ctx.settings, result, ctx.runner),
                old.info.id, None,
            )  # fmt: skip
        return "undone"
    others: list[tuple[ServerView, str]] = []
    for other in switch.others:
        view = snapshot.by_id.get(other.registered_server_id)
        if view is not None and not view.info.maintenance:
            others.append((view, other.connection))
    moved, failed = await complete_move(
        ctx.settings, new, others, old, None, switch.connection, keeps=switch.candidate_keeps
    )
    done.append(f"completed: {new.info.label} is the master; " + "; ".join(moved))
    problems.extend(failed)
    return "rolled_forward"


async def _repair_hub_switch(
    snapshot: ClusterSnapshot, plan: HubSwitchPlan, done: list[str], problems: list[str]
) -> RepairVerdict:
    """An intermediate master's switchover (`hub_switchover`): completed when the candidate had begun to
    replicate from the hub's masters (it may hold what the hub lacks), else undone."""
    candidate = snapshot.by_id.get(plan.candidate_registered_server_id)
    hub = snapshot.by_id.get(plan.hub_registered_server_id)
    if candidate is None or hub is None:
        problems.append("the hub or the candidate is no longer registered")
        return "unknown"
    if candidate.status is None:
        problems.append(f"{candidate.info.label} (the candidate) cannot be reached ({candidate.error}): whether "
                        f"it took over is unknown, so {hub.info.label} is left as it is")  # fmt: skip
        return "unknown"
    incoming = {c.name for c in plan.incoming}
    taken = [c for c in candidate.status.connections if c.name in incoming and c.running]
    if taken:
        moved, failed = await complete_hub_move(snapshot, plan)
        done.append(f"completed: {candidate.info.label} replicates from the hub's masters; " + "; ".join(moved))
        problems.extend(failed)
        return "rolled_forward"
    try:
        done.append("undone: " + await undo_hub_move(snapshot, plan))
    except OperationFailed as e:
        problems.append(e.message)
    return "undone"


async def repair_failover(
    ctx: RepairContext, snapshot: ClusterSnapshot, result: OperationResult, done: list[str], problems: list[str]
) -> RepairVerdict:
    """A failover's: completed after the promotion, else its temporary leveling connections removed."""
    assert isinstance(result, FailoverResult)
    if result.hub_failover is not None:
        moved, failed = await complete_hub_failover(snapshot, result.hub_failover)
        done.append("completed: the lost hub's replicas are re-homed; " + "; ".join(moved))
        problems.extend(failed)
        return "rolled_forward"
    new = snapshot.by_id.get(result.new_master_registered_server_id or 0)
    old_id = result.old_master_registered_server_id
    if new is None:
        done.append("it stopped before choosing a candidate: nothing was changed")
        return "unchanged"
    if not new.reachable:
        problems.append(f"{new.info.label} (the candidate) cannot be reached ({new.error})")
        return "unknown"
    assert new.status is not None
    driver = new.require_driver()
    leveling = [c.name for c in new.status.connections if c.name.startswith(LEVEL_PREFIX)]
    for name in leveling:
        try:
            await driver.remove_replication(name)
            done.append(f"{new.info.label}: temporary connection {name!r} removed")
        except DriverError as e:
            problems.append(f"{new.info.label}: {e}")
    old_address = None if old_id not in snapshot.by_id else snapshot.by_id[old_id].info.protocol_address
    # Promoted once it is writable or its connections to the lost master are gone (its connections to the cluster's
    # other masters, a multi-source candidate's, stay through a promotion); else the promotion had not begun, or
    # stopped a connection of it and no more: that one is started again.
    to_old = [
        c for c in new.status.connections
        if c.name not in leveling and (old_address is None or c.master_address == old_address)
    ]  # fmt: skip
    if new.status.read_only and to_old:
        for connection in to_old:
            if not connection.running:
                await _start_again(new, connection.name, "", done, problems)
        done.append(f"{new.info.label} was not promoted: nothing else was changed (the failover may be retried)")
        return "undone" if leveling or any(not c.running for c in to_old) else "unchanged"
    # A multi-source candidate's connections to the cluster's other masters are stopped and started again around
    # its promotion: one the crash left stopped (cleanly, no error) is started again.
    for connection in new.status.connections:
        if connection.name in leveling or connection in to_old or connection.running or connection.last_error:
            continue
        await _start_again(new, connection.name, " to another master", done, problems)
    others = []
    for view in snapshot.views:
        if view is new or view.info.id == old_id or view.info.maintenance:
            continue
        if view.status is None:
            problems.append(
                f"{view.info.label}: its replication could not be read ({view.error}): not repointed to "
                f"{new.info.label} — repoint it once it answers"
            )
            continue
        for connection in view.status.connections:
            if connection.master_address in (old_address, new.info.protocol_address):
                others.append((view, connection.name))
    moved, failed = await complete_move(ctx.settings, new, others, None)
    done.append(f"completed: {new.info.label} is the master; " + "; ".join(moved))
    problems.extend(failed)
    return "rolled_forward"


async def _start_again(view: ServerView, name: str, what: str, done: list[str], problems: list[str]) -> None:
    """Starts a connection a crash left stopped, saying so in `done` or what failed in `problems`."""
    try:
        await view.require_driver().start_replication(name)
        done.append(f"{view.info.label}: connection {name!r}{what} started again")
    except DriverError as e:
        problems.append(f"{view.info.label}: connection {name!r}{what} not started again: {e}")


#: A kind's repair: `(context, snapshot, the operation's result, done, problems)`, appending what it did and could
#: not, and returning it typed.
Repair = Callable[[RepairContext, ClusterSnapshot, OperationResult, list[str], list[str]], Awaitable[RepairVerdict]]
