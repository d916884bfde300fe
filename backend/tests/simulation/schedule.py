"""One seeded schedule, start to end, and many of them.

`run(seed)`: a topology and its writers from `random.Random(seed)`; clients write for a moment; the real switchover
(`switchover.run_switchover`: preflight, catch-up, window, promotion, repoints, verify — with its guard's undo,
`settle` and roll forward) runs in API instance `api-1` under the schedule's faults. When that instance crashes, it is
frozen where it was; the lease lapses (a moment of virtual time, clients still writing), and instance `api-2` runs
the reconciler's repair (`repairs.repair_switch`, the switchover kind's) on what the servers show, with what the
operation had recorded, holding the cluster's lock (the next fencing token, wake.py). In some schedules (one crash in
three or so, from a random stream of its own: faults.py `draw_wake`) `api-1` was only paused: it wakes up once the
reconcile released the cluster — perhaps while a second operation holds it — and its pending call and later steps go
on under the real fencing (`check_fence`, the heartbeat's renewal, the compensation's claim). Then clients go on a
little, stop, replication settles, and the invariants are checked (invariants.py, and wake.py's: after the takeover
only the lock's holder changes a server, and the record is the reconcile's).

Everything runs on a virtual-time event loop (clock.py), so a schedule is a pure function of its seed."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from ferry_control.core.config import Settings
from ferry_control.core.metrics import Metrics
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.fencing import acting_for
from ferry_control.schemas.operation import SwitchoverParams, lenient
from ferry_control.schemas.operation_results import SwitchoverResult
from ferry_control.services.orchestrator.raise_fences import raise_fences
from ferry_control.services.orchestrator.repairs import RepairContext, repair_switch
from ferry_control.services.orchestrator.runner import Executor, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot
from ferry_control.services.orchestrator.switchover import run_switchover
from tests.simulation import invariants, wake
from tests.simulation.clock import VirtualClockLoop, now, virtual_time
from tests.simulation.cluster import Cluster
from tests.simulation.context import SimContext, SimRunner, registered
from tests.simulation.database import SimDatabase
from tests.simulation.driver import SimDriverFactory
from tests.simulation.faults import FaultPlan, Instance, draw_wake
from tests.simulation.invariants import Outcome, Violation
from tests.simulation.proxies import CURRENT, simulated_proxies
from tests.simulation.topology import CLUSTER_ID, Topology, generate

#: How many calls (and step starts) of the operation's instance a crash may come at: a switchover makes about this
#: many, so crash points spread over all of it, and past it (no crash) now and then.
CRASH_CALLS_MAX = 110


@dataclass
class Report:
    seed: int
    topology: str
    outcome: Outcome | None
    violations: list[Violation]
    faults: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    crash: str | None = None
    #: What is wrong without breaking an invariant: an operation ending in an internal error; a move rolled forward
    #: although its candidate had taken no write when it stopped (no_return.py would undo it; the reconcile
    #: completes any move whose candidate's connection to the old master is gone).
    findings: list[str] = field(default_factory=list)
    #: `switchover` or `failover` (failover_schedule.py): which executor the schedule ran.
    kind: str = "switchover"
    #: A failover's: acknowledged writes only the lost master had (lost by design).
    rpo: int = 0
    #: A woken instance's change that was pending at its pause and landed after the takeover (wake.py): past every
    #: check of the lock, which fencing at the lock cannot stop (known.py).
    in_flight: list[str] = field(default_factory=list)
    #: How the operation of an instance that woke up after the takeover ended (None: it did not wake).
    woke: str | None = None

    def summary(self) -> str:
        lines = [f"seed {self.seed}: {self.topology}" if self.kind == "switchover" else
                 f"{self.kind} seed {self.seed}: {self.topology}"]  # fmt: skip
        if self.outcome is not None:
            lines.append(f"outcome: {self.outcome.kind} by the {self.outcome.by}: {self.outcome.detail[:600]}")
        if self.crash:
            lines.append(f"api-1 crashed {self.crash}")
        lines.append("faults: " + ("; ".join(self.faults) or "none"))
        lines.append("steps: " + ", ".join(self.steps))
        lines += [f"in flight: {f}" for f in self.in_flight]
        lines += [f"finding: {f}" for f in self.findings]
        lines += [f"VIOLATION: {v}" for v in self.violations]
        return "\n".join(lines)


def base_settings() -> Settings:
    """The defaults, but for the verification's bound: 5 s instead of 30 (replicas here catch up in milliseconds,
    a delayed one receives at once), so a verification that cannot end — a follower left broken — costs a sixth."""
    return Settings(
        environment="test", token_pepper=SecretStr("simulation-pepper-0123456789"), collector_enabled=False,
        drill_scheduler_enabled=False, verify_timeout_s=5.0, operation_lease_s=wake.LEASE_S,
    )  # fmt: skip


@dataclass
class _Shared:
    """What every schedule of a batch shares (built once)."""

    settings: Settings
    metrics: Metrics


async def _operate(ctx: SimContext, executor: Executor = run_switchover) -> str | None:
    """The operation as the runner runs it (its guard around the executor); the error it ends with, if any."""
    try:
        async with ctx.guarded():
            await executor(ctx)
    except asyncio.CancelledError:
        if ctx.stop_reason is None:
            raise
        # Stopped from inside its instance (the heartbeat found the lock taken over): the runner's end of it.
        ctx.fail(asyncio.CancelledError())
        outcome = ctx.undo_outcome
        return ctx.stop_reason if outcome is None else outcome.message
    except (OperationFailed, DriverError) as e:
        ctx.fail(e)  # the runner types the failure so (`_run`)
        return getattr(e, "message", str(e))
    except Exception as e:  # the runner records it as "internal error: …"
        if ctx.instance is not None and ctx.instance.crashed.is_set():
            return f"internal error after the crash: {type(e).__name__}: {e}"
        ctx.internal_error = f"{type(e).__name__}: {e}"
        return f"internal error: {type(e).__name__}: {e}"
    return None


def _live_outcome(ctx: SimContext, error: str | None, writable_at_stop: bool) -> Outcome:
    candidate = ctx.result.new_master_registered_server_id
    settled = [s for s in ctx.steps if s.name == "settle"]
    if error is not None and settled:
        error += f" [settle: {settled[-1].detail}]"
    if error is None:
        return Outcome("succeeded", "operation", "succeeded", candidate, True)
    undo = ctx.undo_outcome
    if undo is None:
        promoted = any(s.name == "promote_candidate" and s.state == "passed" for s in ctx.steps)
        kind = "moved_unverified" if promoted else "unchanged"
        return Outcome(kind, "operation", error, candidate, writable_at_stop)
    if not undo.complete:
        kind = "incomplete"
    else:
        kind = "undone" if undo.kind == "undone" else "rolled_forward"
    return Outcome(kind, "operation", error, candidate, writable_at_stop)


async def _reconcile(
    shared: _Shared,
    settings: Settings,
    cluster: Cluster,
    topology: Topology,
    ctx: SimContext,
    faults: FaultPlan,
    rng: random.Random,
) -> tuple[Outcome, SimRunner]:
    instance = Instance("api-2")
    drivers = SimDriverFactory(cluster, instance, faults, rng, mariadb=topology.mariadb)
    runner = SimRunner(settings, drivers, shared.metrics)
    assert ctx.registered is not None
    cluster_row, servers = ctx.registered
    repair = RepairContext(SimDatabase(cluster_row, servers), settings, runner, ctx.operation_id)  # type: ignore[arg-type]
    result = lenient(SwitchoverResult, ctx.stored)
    CURRENT.set((instance, cluster, faults))
    snapshot = await ClusterSnapshot.take(cluster_row, servers, drivers, settings.collection.poll_timeout_s)  # type: ignore[arg-type]
    done: list[str] = []
    problems: list[str] = await raise_fences(snapshot)  # as reconcile.py does
    await repair_switch(repair, snapshot, result, done, problems)
    words = "; ".join(done) + (" | could not: " + "; ".join(problems) if problems else "")
    candidate = result.switch.new_master_registered_server_id if result.switch else None
    if problems:
        kind = "incomplete"
    elif any(d.startswith("undone") for d in done):
        kind = "undone"
    elif any(d.startswith("completed") for d in done):
        kind = "rolled_forward"
    else:
        kind = "unchanged"
    return Outcome(kind, "reconcile", words, candidate, False), runner


async def _schedule(seed: int, shared: _Shared) -> Report:
    rng = random.Random(seed)
    cluster, topology = generate(rng)
    faults = _faults(rng)
    api = Instance("api-1", crash_at=rng.randrange(1, CRASH_CALLS_MAX) if rng.random() < 0.5 else None)
    settings = shared.settings.model_copy(update={"haproxy_admin_sockets": list(topology.proxies)})
    drivers = SimDriverFactory(cluster, api, faults, rng, mariadb=topology.mariadb)
    runner = SimRunner(settings, drivers, shared.metrics)
    report = Report(seed, topology.describe(cluster), None, [], faults.log)
    stop_state: dict[str, float] = {}
    woken = draw_wake("switchover", seed)

    def candidate_writable() -> bool:
        candidate = ctx.result.new_master_registered_server_id
        return candidate is not None and candidate in cluster.made_writable

    def on_stop() -> None:
        stop_state.setdefault("writable", candidate_writable())
        stop_state.setdefault("at", now())

    params = SwitchoverParams(
        candidate_registered_server_id=topology.candidate, source_registered_server_id=topology.source
    )
    ctx = SimContext(
        runner=runner, operation_id=1, cluster_id=CLUSTER_ID, type="switchover",  # type: ignore[arg-type]
        params=params, result=SwitchoverResult(), dry_run=False, requester="simulation", fencing_token=1,
        instance=api, faults=faults, registered=registered(CLUSTER_ID, cluster.servers.values()), on_stop=on_stop,
    )  # fmt: skip
    assert ctx.registered is not None
    fencing = wake.Fencing(api, ctx, *ctx.registered)
    runner.sessionmaker = fencing.database
    await asyncio.sleep(rng.uniform(0.0, 0.05))
    CURRENT.set((api, cluster, faults))
    with acting_for(ctx.acting()):  # its changes carry its fencing token, as runner.py sends them
        work = asyncio.create_task(_operate(ctx))
    fencing.start(work)
    crashed = asyncio.create_task(api.crashed.wait())
    await asyncio.wait({work, crashed}, return_when=asyncio.FIRST_COMPLETED)
    runners = [runner]
    if work.done():
        crashed.cancel()
        fencing.ended()
        outcome = _live_outcome(ctx, work.result(), bool(stop_state.get("writable", candidate_writable())))
    else:
        report.crash = api.crash_point
        writable_at_crash = candidate_writable()
        # The lease lapses (a paused holder's for real); clients go on writing.
        await fencing.take_over(rng.uniform(0.0, 0.5), wait_for_lease=woken is not None)
        stop_state["at"] = now()
        with acting_for(fencing.reconciling()):
            outcome, second = await _reconcile(shared, settings, cluster, topology, ctx, faults, rng)
        outcome = Outcome(outcome.kind, outcome.by, outcome.detail, outcome.candidate, writable_at_crash)
        runners.append(second)
        await fencing.hand_back(outcome.detail)
        if woken is not None:
            report.woke = await fencing.wake_up(woken, work, faults.log)
    report.outcome = outcome
    report.steps = [f"{s.name} {s.state}" for s in ctx.steps]
    await asyncio.sleep(rng.uniform(0.0, 0.1))  # clients write to whatever is writable now
    cluster.stop_writers()
    await asyncio.sleep(max(topology.delays.values(), default=0) + 1.0)
    cluster.advance(now())
    stale = {proxy for r in runners for proxy, _ in r.stale_proxies.pairs}
    report.violations = invariants.check(cluster, topology, outcome, stale) + fencing.check(cluster)
    report.in_flight = fencing.in_flight(cluster)
    if ctx.internal_error is not None:
        report.findings.append(f"the operation ended in an internal error: {ctx.internal_error}")
    api.release()
    await asyncio.wait([work])
    return report


def _faults(rng: random.Random) -> FaultPlan:
    plan = FaultPlan(random.Random(rng.random()))
    profile = rng.random()
    if profile < 0.35:
        return plan  # only the crash, when there is one
    plan.lost_rate = rng.choice((0.0, 0.01, 0.03))
    plan.unreachable_rate = rng.choice((0.0, 0.005, 0.02))
    plan.proxy_unreachable_rate = rng.choice((0.0, 0.05))
    return plan


@contextmanager
def _simulation() -> Iterator[None]:
    """Virtual time, the simulated proxies, and the orchestrator's logs quiet (a schedule's failures are expected
    and said in its report)."""
    logger = logging.getLogger("ferry_control")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with virtual_time(), simulated_proxies():
            yield
    finally:
        logger.setLevel(level)


def run(seed: int) -> Report:
    """One schedule (a replay)."""
    return run_many([seed]).reports[0]


#: One schedule of a seed: a switchover's (`_schedule`) or a failover's (failover_schedule.py).
Schedule = Callable[[int, _Shared], Awaitable[Report]]


def _run(seed: int, shared: _Shared, schedule: Schedule) -> Report:
    """One schedule on a fresh virtual-time loop (inside `_simulation`)."""
    loop = VirtualClockLoop()
    try:
        try:
            return loop.run_until_complete(schedule(seed, shared))
        except Exception as e:  # the simulation or the code under test broke: a failure of its own
            kind = "switchover" if schedule is _schedule else "failover"
            raised = f"the schedule raised {type(e).__name__}: {e}"
            return Report(seed, "?", None, [Violation("error", raised)], kind=kind)
        finally:
            _finish(loop)
    finally:
        loop.close()


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    """Ends what is left (a frozen instance's tasks, recordings) so the loop closes clean."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


@dataclass
class Batch:
    reports: list[Report]
    seconds: float

    @property
    def failed(self) -> list[Report]:
        return [r for r in self.reports if r.violations]

    def outcomes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.reports:
            key = "error" if r.outcome is None else f"{r.outcome.kind} ({r.outcome.by})"
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items()))


def run_many(seeds: Any, *, stop_at_first: bool = False, schedule: Schedule | None = None) -> Batch:
    shared = _Shared(base_settings(), Metrics())
    started = time.perf_counter()
    reports = []
    with _simulation():
        for seed in seeds:
            report = _run(seed, shared, schedule or _schedule)
            reports.append(report)
            if stop_at_first and report.violations:
                break
    return Batch(reports, time.perf_counter() - started)
