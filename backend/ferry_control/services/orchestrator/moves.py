"""The move model: every kind of move that replaces a source (a master switchover, a hub switchover, a failover, a
hub failover) is a typed plan, recorded in the operation's result before its first move, with a point of no return
judged from the servers, one undo before it and one completion after it. Each model's undo and completion are the
same functions for the live run (its guard's compensation: `undo`, `settle`, `roll_forward` steps) and for the
reconcile after a crash (repairs.py): `undo(ctx, plan, observed)` and `complete(ctx, plan, observed)` dispatch on the
plan's type to the model's functions, declared once in `moves()`.

- master switch (`MasterSwitch`): past the point of no return once `no_return.decide` says so (the candidate cut
  from the old master, or fenced holding a write of its own); `switchover.undo_switch`, `switchover.complete_switch`;
- hub switch (`HubSwitchPlan`): once `hub_switchover.taken_over` (the candidate has one of the hub's incoming
  connections); `hub_switchover.undo_hub_move`, `hub_switchover.complete_hub_move`;
- failover (`FailoverMove`): once `failover.promoted` (writable, or its connections to the lost master gone);
  `failover.undo_failover`, `failover.complete_failover`;
- hub failover (`HubFailoverPlan`): once its plan is saved (the hub is lost: nothing to go back to); no undo,
  `hub_failover.complete_hub_failover`.

The steps the models share are written once: the relay logs drained (`actions.drain_relay_logs`), the candidate
chosen (`candidates.choose_candidate`), the replicas following the new master (`switchover.complete_move`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.schemas.operation_results import HubFailoverPlan, HubSwitchPlan, MasterSwitch
from ferry_control.services.orchestrator.failures import OperationFailed
from ferry_control.services.orchestrator.snapshot import ServerView

if TYPE_CHECKING:
    from ferry_control.services.orchestrator.runner import OperationContext

#: The servers as the caller sees them, by server id (a live run's snapshot, or a reconcile's).
Observed = Mapping[int, ServerView]


class MoveContext(Protocol):
    """What an undo or a completion needs besides the servers — the proxies (routing.py) and the fence record: the
    live operation's context (`OperationContext`), or a reconcile's (repairs.py)."""

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]: ...
    @property
    def cluster_id(self) -> int: ...
    @property
    def operation_id(self) -> int: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def result(self) -> Any: ...
    @property
    def runner(self) -> Any: ...


@dataclass(frozen=True)
class FailoverMove:
    """A failover's plan (a `FailoverResult`'s fields, recorded before its first move): the lost master, the
    candidate, and the candidate's connections that ran when it began (None: a row older than that record)."""

    old_master_server_id: int
    new_master_server_id: int
    candidate_ran: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Settled:
    """What an undo or a completion did, in words, and what it could not do (each problem names its server)."""

    done: list[str]
    problems: list[str]


#: A model's undo or completion: `(context, plan, observed)`.
Step = Callable[[MoveContext, Any, Observed], Awaitable[Settled]]


@dataclass(frozen=True)
class Move:
    """One move model: its plan's type, its undo (None: nothing to put back once it began) and its completion."""

    name: str
    plan: type
    undo: Step | None
    complete: Step


@cache
def moves() -> tuple[Move, ...]:
    """Every move model, declared once."""
    # The models' modules import this one's types: they are read when the table is first used.
    from ferry_control.services.orchestrator import failover, hub_failover, hub_switchover, switchover

    return (
        Move("master switch", MasterSwitch, switchover.undo_switch, switchover.complete_switch),
        Move("hub switch", HubSwitchPlan, hub_switchover.undo_hub_move, hub_switchover.complete_hub_move),
        Move("failover", FailoverMove, failover.undo_failover, failover.complete_failover),
        Move("hub failover", HubFailoverPlan, None, hub_failover.complete_hub_failover),
    )


def model_of(plan: object) -> Move:
    return next(m for m in moves() if isinstance(plan, m.plan))


async def undo(ctx: MoveContext, plan: object, observed: Observed) -> Settled:
    """Puts back what the move of `plan` changed, before its point of no return."""
    step = model_of(plan).undo
    assert step is not None, f"a {model_of(plan).name} is never undone once it began"
    return await step(ctx, plan, observed)


async def complete(ctx: MoveContext, plan: object, observed: Observed) -> Settled:
    """Makes every move of `plan` not made yet, past its point of no return."""
    return await model_of(plan).complete(ctx, plan, observed)


async def as_step(ctx: OperationContext[Any, Any], name: str, settle: Callable[[], Awaitable[Settled]]) -> str:
    """A live compensation (a model's undo or completion, `settle`, called once the step is open) recorded as the
    step `name` with what it did and could not; returns what it did, or raises OperationFailed naming what it could
    not do."""
    async with ctx.step(name, fenced=False) as step:
        settled = await settle()
        step.detail = {"done": settled.done, "problems": settled.problems}
        if settled.problems:
            raise OperationFailed("; ".join(settled.problems))
    return "; ".join(settled.done)
