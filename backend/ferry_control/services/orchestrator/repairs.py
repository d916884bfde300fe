"""What a reconcile does to the servers per kind of operation left by a dead API instance (reconcile.py says when):
a switchover's or a drill's move undone or completed, a failover's completed or undone — each judged by the rule a
live stop follows and done by the model's one undo or completion, the live run's too (moves.py). Each kind's
function is named by its declaration (kinds.py); the one-server operations have none (examined only); a consistency
check's is beside its executor (consistency.py). Each says what
it did in words (`done`, `problems`) and typed (a `RepairVerdict`: the operation's `result.failure` is made of it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.schemas.operation_results import (
    FailoverResult,
    HubSwitchPlan,
    OperationResult,
    SwitchesMaster,
)
from ferry_control.services.orchestrator import moves, no_return
from ferry_control.services.orchestrator.failover import promoted
from ferry_control.services.orchestrator.failures import RepairVerdict
from ferry_control.services.orchestrator.hub_switchover import taken_over
from ferry_control.services.orchestrator.moves import FailoverMove
from ferry_control.services.orchestrator.runner import OperationRunner
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot


@dataclass(frozen=True)
class RepairContext:
    """What a repair needs of the reconciler besides the servers."""

    sessionmaker: async_sessionmaker[AsyncSession]
    settings: Settings
    runner: OperationRunner
    #: The operation being reconciled (what the completion records its writable domains as set by).
    operation_id: int


@dataclass(frozen=True)
class _Move:
    """A reconcile's `MoveContext`: what the undo and completion of a move need besides the servers."""

    sessionmaker: async_sessionmaker[AsyncSession]
    cluster_id: int
    operation_id: int
    settings: Settings
    result: OperationResult
    runner: OperationRunner


def _report(settled: moves.Settled, done: list[str], problems: list[str], what: str) -> None:
    if settled.done or not settled.problems:
        done.append(f"{what}: " + ("; ".join(settled.done) or "nothing was left to do"))
    problems.extend(settled.problems)


async def repair_switch(
    ctx: RepairContext, snapshot: ClusterSnapshot, result: OperationResult, done: list[str], problems: list[str]
) -> RepairVerdict:
    """A switchover's or a drill's (`SwitchesMaster`): undone while the candidate took no write, else completed —
    by the live stop's rule and with its undo and completion (moves.py)."""
    assert isinstance(result, SwitchesMaster)
    move = _Move(ctx.sessionmaker, snapshot.cluster_id, ctx.operation_id, ctx.settings, result, ctx.runner)
    if result.hub_switch is not None:
        return await _repair_hub_switch(move, snapshot, result.hub_switch, done, problems)
    switch = result.switch
    if switch is None:
        done.append("it stopped before changing any server: nothing to undo")
        return "unchanged"
    old = snapshot.by_id.get(switch.old_master_registered_server_id)
    new = snapshot.by_id.get(switch.new_master_registered_server_id)
    if old is None or new is None:
        problems.append("the old master or the candidate is no longer registered")
        return "unknown"
    if not new.reachable:
        problems.append(
            f"{new.info.label} (the candidate) cannot be reached ({new.error}): whether it was promoted is "
            f"unknown, so {old.info.label} is left as it is"
        )
        return "unknown"
    # The same rule as a live stop (no_return.decide): completed once the candidate's connection to the old master
    # is gone or it took writes, else undone.
    try:
        verdict = await no_return.decide(new, old, switch.connection, result.position)
    except no_return.Undecidable as e:
        problems.append(f"{e}: whether it took writes as the master is unknown; the servers are left as they are")
        return "unknown"
    done.append(verdict.detail)
    if not verdict.complete:
        settled = await moves.undo(move, switch, snapshot.by_id)
        if settled.problems:
            _report(settled, done, problems, "undone in part")
        else:
            was = "read-only as before" if switch.old_master_was_read_only else "writable again"
            done.append(f"undone: {old.info.label} {was}, {new.info.label} replicates from it as before")
        return "undone"
    _report(await moves.complete(move, switch, snapshot.by_id), done, problems,
            f"completed: {new.info.label} is the master")  # fmt: skip
    return "rolled_forward"


async def _repair_hub_switch(
    move: _Move, snapshot: ClusterSnapshot, plan: HubSwitchPlan, done: list[str], problems: list[str]
) -> RepairVerdict:
    """An intermediate master's switchover (`hub_switchover`): completed once the candidate has one of the hub's
    incoming connections (`hub_switchover.taken_over`, the live stop's rule), else undone."""
    candidate = snapshot.by_id.get(plan.candidate_registered_server_id)
    hub = snapshot.by_id.get(plan.hub_registered_server_id)
    if candidate is None or hub is None:
        problems.append("the hub or the candidate is no longer registered")
        return "unknown"
    if candidate.status is None:
        problems.append(f"{candidate.info.label} (the candidate) cannot be reached ({candidate.error}): whether "
                        f"it took over is unknown, so {hub.info.label} is left as it is")  # fmt: skip
        return "unknown"
    if taken_over(candidate.status.connections, plan):
        _report(await moves.complete(move, plan, snapshot.by_id), done, problems,
                f"completed: {candidate.info.label} replicates from the hub's masters")  # fmt: skip
        return "rolled_forward"
    _report(await moves.undo(move, plan, snapshot.by_id), done, problems, "undone")
    return "undone"


async def repair_failover(
    ctx: RepairContext, snapshot: ClusterSnapshot, result: OperationResult, done: list[str], problems: list[str]
) -> RepairVerdict:
    """A failover's: completed once its candidate was promoted (`failover.promoted`, the live stop's rule), else
    undone (its temporary leveling connections removed, its connections that ran running again)."""
    assert isinstance(result, FailoverResult)
    move = _Move(ctx.sessionmaker, snapshot.cluster_id, ctx.operation_id, ctx.settings, result, ctx.runner)
    if result.hub_failover is not None:
        _report(await moves.complete(move, result.hub_failover, snapshot.by_id), done, problems,
                "completed: the lost hub's replicas are re-homed")  # fmt: skip
        return "rolled_forward"
    new = snapshot.by_id.get(result.new_master_registered_server_id or 0)
    if new is None or result.old_master_registered_server_id is None:
        done.append("it stopped before choosing a candidate: nothing was changed")
        return "unchanged"
    if new.status is None:
        problems.append(f"{new.info.label} (the candidate) cannot be reached ({new.error})")
        return "unknown"
    plan = FailoverMove(
        result.old_master_registered_server_id, new.info.id,
        None if result.candidate_ran is None else tuple(result.candidate_ran),
    )  # fmt: skip
    old = snapshot.by_id.get(result.old_master_registered_server_id)
    if promoted(new.status, None if old is None else old.info.protocol_address):
        _report(await moves.complete(move, plan, snapshot.by_id), done, problems,
                f"completed: {new.info.label} is the master")  # fmt: skip
        return "rolled_forward"
    settled = await moves.undo(move, plan, snapshot.by_id)
    _report(settled, done, problems, f"{new.info.label} was not promoted (the failover may be retried)")
    return "undone" if settled.done else "unchanged"


#: A kind's repair: `(context, snapshot, the operation's result, done, problems)`, appending what it did and could
#: not, and returning it typed.
Repair = Callable[[RepairContext, ClusterSnapshot, OperationResult, list[str], list[str]], Awaitable[RepairVerdict]]
