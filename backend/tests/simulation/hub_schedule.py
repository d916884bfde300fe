"""One seeded hub move's schedule, start to end, and many of them.

`replay(seed)`: a topology around a hub and its writers from their own random stream (`Random("hub <seed>")`, so
the switchover's and the failover's schedules of the same seeds are untouched) and, by that stream, one of two moves
run in API instance `api-1` under the schedule's faults (faults.py: an API crash between or inside steps, lost
answers, servers unreachable):

- a hub switchover (`switchover.run_switchover` with the hub as its source: `hub_switchover.switch_hub`, its guard's
  undo, settle and roll forward); after a crash, `api-2` runs the reconciler's repair (`repairs.repair_switch`: the
  hub switch's undo or completion);
- a hub failover: the hub is lost — crashed, or cut off from everyone — and a moment later `failover.run_failover`
  with the hub as its source (`hub_failover.fail_over_hub`, manual or automatic); after a crash, `api-2` runs
  `repairs.repair_failover` (the hub failover's completion). The lost hub's incoming connections are read from the
  links the collector stored (database.py). Then the lost hub perhaps answers again (restarted, or as it was) and
  the failover monitor's fencing pass runs.

Either perhaps with a replica of the tree crashing meanwhile (back after a while, or not), and `api-1` perhaps waking
up after the reconcile (wake.py). Then clients go on a
little and stop, replication settles, and the hub moves' invariants are checked (hub_invariants.py)."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

from ferry_control.drivers.fencing import acting_for
from ferry_control.models import LinkSource
from ferry_control.schemas.operation import FailoverParams, SwitchoverParams
from ferry_control.schemas.operation_results import FailoverResult, SwitchoverResult
from ferry_control.services.orchestrator.failover import run_failover
from ferry_control.services.orchestrator.switchover import run_switchover
from tests.simulation import failover_schedule, hub_invariants, schedule, wake
from tests.simulation.clock import now
from tests.simulation.context import SimContext, SimRunner
from tests.simulation.database import SimDatabase
from tests.simulation.driver import SimDriverFactory
from tests.simulation.faults import Instance, draw_wake
from tests.simulation.hub_topology import generate_hub
from tests.simulation.invariants import Outcome
from tests.simulation.proxies import CURRENT
from tests.simulation.schedule import Batch, Report, _faults, _live_outcome, _operate, _Shared, run_many
from tests.simulation.topology import CLUSTER_ID

#: How many calls (and step starts) of the operation's instance a crash may come at: a hub move makes about this
#: many, so crash points spread over all of it, and past it (no crash) now and then.
CRASH_CALLS_MAX = 70


def _outcome(ctx: SimContext, error: str | None) -> Outcome:
    """The live run's outcome: a hub move that failed its verification, every move made, is moved unverified."""
    outcome = _live_outcome(ctx, error, False)
    if outcome.kind == "unchanged" and any(s.name == "verify" for s in ctx.steps):
        return Outcome("moved_unverified", outcome.by, outcome.detail, outcome.candidate, False)
    return outcome


async def _schedule(seed: int, shared: _Shared) -> Report:
    rng = random.Random(f"hub {seed}")
    woken = draw_wake("hub", seed)
    cluster, topology = generate_hub(rng)
    failover = rng.random() < 0.5
    faults = _faults(rng)
    api = Instance("api-1", crash_at=rng.randrange(1, CRASH_CALLS_MAX) if rng.random() < 0.5 else None)
    settings = shared.settings
    drivers = SimDriverFactory(cluster, api, faults, rng, mariadb=topology.mariadb)
    runner = SimRunner(settings, drivers, shared.metrics)
    cluster_row, rows = failover_schedule._cluster_row(CLUSTER_ID, cluster.servers.values())
    # The hub's incoming connections as the collector stored them (a hub failover reads them: the hub is lost).
    links = [
        SimpleNamespace(replica_server_id=topology.hub, source=LinkSource.replica, master_server_id=root,
                        master_address=cluster.servers[root].address, name=name)
        for name, root in topology.incoming.items()
    ]  # fmt: skip
    runner.sessionmaker = SimDatabase(cluster_row, rows, links)
    hub = cluster.servers[topology.hub]
    kind = "hub_failover" if failover else "hub_switchover"
    report = Report(seed, topology.describe(cluster), None, [], faults.log, kind=kind)
    crashed = rng.random() < 0.6
    automatic = rng.random() < 0.5
    hub_returns = rng.random() < 0.6
    # A replica of the tree perhaps crashing meanwhile (back after a while, or not), from a stream of its own (the
    # schedules without one are as they were).
    pick = random.Random(f"hub replica {seed}")
    replica_crash_at = pick.uniform(0.0, 0.3) if pick.random() < 0.2 else None
    replica_pick = pick.random()
    replica_back_after = pick.uniform(0.05, 0.5) if pick.random() < 0.5 else None
    ctx: SimContext
    if failover:
        await asyncio.sleep(rng.uniform(0.02, 0.2))  # clients write
        cluster.go_down(hub, now(), crashed=crashed)
        faults.log.append(f"{now():.6f} hub {hub.name} {'crashed' if crashed else 'cut off from everyone'}")
        await asyncio.sleep(rng.uniform(0.0, 0.2))  # until the loss is noticed
        params: Any = FailoverParams(candidate_registered_server_id=topology.candidate,
                                     source_registered_server_id=topology.hub, automatic=automatic)  # fmt: skip
        ctx = SimContext(
            runner=runner, operation_id=1, cluster_id=CLUSTER_ID, type="failover",  # type: ignore[arg-type]
            params=params, result=FailoverResult(), dry_run=False, requester="simulation", fencing_token=1,
            instance=api, faults=faults, registered=(cluster_row, rows),
        )  # fmt: skip
        with acting_for(ctx.acting()):  # its changes carry its fencing token, as runner.py sends them
            work = asyncio.create_task(_operate(ctx, run_failover))
    else:
        await asyncio.sleep(rng.uniform(0.0, 0.05))
        params = SwitchoverParams(candidate_registered_server_id=topology.candidate,
                                  source_registered_server_id=topology.hub)  # fmt: skip
        ctx = SimContext(
            runner=runner, operation_id=1, cluster_id=CLUSTER_ID, type="switchover",  # type: ignore[arg-type]
            params=params, result=SwitchoverResult(), dry_run=False, requester="simulation", fencing_token=1,
            instance=api, faults=faults, registered=(cluster_row, rows),
        )  # fmt: skip
        with acting_for(ctx.acting()):
            work = asyncio.create_task(_operate(ctx, run_switchover))
    operating = [True]
    loop = asyncio.get_running_loop()
    #: Set once no crashed replica is still to come back.
    replicas_settled = asyncio.Event()
    replicas_settled.set()

    def replica_crashes() -> None:
        if not operating[0]:
            return
        spared = {topology.hub, ctx.result.new_master_registered_server_id, topology.candidate}
        choices = [s for s in cluster.main() if s.id != topology.root and s.id not in spared and not s.down]
        if not choices:
            return
        failover_schedule.crash_a_replica(
            loop, cluster, faults, choices, replica_pick, replica_back_after, replicas_settled
        )

    if replica_crash_at is not None:
        loop.call_later(replica_crash_at, replica_crashes)
    CURRENT.set((api, cluster, faults))
    fencing = wake.Fencing(api, ctx, *(cluster_row, rows, links))
    runner.sessionmaker = fencing.database
    fencing.start(work)
    crashed_api = asyncio.create_task(api.crashed.wait())
    await asyncio.wait({work, crashed_api}, return_when=asyncio.FIRST_COMPLETED)
    if work.done():
        crashed_api.cancel()
        fencing.ended()
        outcome = _outcome(ctx, work.result())
    else:
        report.crash = api.crash_point
        # The lease lapses (a paused holder's for real); clients go on writing.
        await fencing.take_over(rng.uniform(0.0, 0.5), wait_for_lease=woken is not None)
        repair = failover_schedule._reconcile if failover else schedule._reconcile
        with acting_for(fencing.reconciling()):
            outcome, _ = await repair(shared, settings, cluster, topology, ctx, faults, rng)  # type: ignore[arg-type]
        # The switchover's reconcile reads a master switch's candidate; a hub's is the operation's.
        candidate = outcome.candidate or ctx.result.new_master_registered_server_id
        outcome = Outcome(outcome.kind, outcome.by, outcome.detail, candidate, False)
        await fencing.hand_back(outcome.detail)
        if woken is not None:
            report.woke = await fencing.wake_up(woken, work, faults.log)
    operating[0] = False
    report.outcome = outcome
    report.steps = [f"{s.name} {s.state}" for s in ctx.steps]
    await asyncio.sleep(rng.uniform(0.0, 0.1))  # clients write to whatever is writable now
    cluster.stop_writers()
    await replicas_settled.wait()  # a crashed replica that comes back is back
    if failover and hub_returns:
        # Restarted: read-only, as a replica's configuration says; cut off: as it was, its connections running.
        cluster.come_back(hub, now(), read_only=True if crashed else None)
        faults.log.append(f"{now():.6f} lost hub {hub.name} answers again")
        await failover_schedule._monitor_fences(settings, cluster, topology, rows)  # type: ignore[arg-type]
    await asyncio.sleep(max(topology.delays.values(), default=0) + 1.0)
    cluster.advance(now())
    fenced = bool(next(r.fenced for r in rows if r.id == hub.id))
    result: Any = ctx.result
    plan = result.hub_failover if failover else result.hub_switch
    moving = [] if plan is None else [o.registered_server_id for o in (plan.siblings if failover else plan.others)]
    report.violations = hub_invariants.check(
        cluster, topology, outcome, failover=failover, hub_fenced=fenced, moving=moving
    ) + fencing.check(cluster)
    report.in_flight = fencing.in_flight(cluster)
    if ctx.internal_error is not None:
        report.findings.append(f"the operation ended in an internal error: {ctx.internal_error}")
    api.release()
    await asyncio.wait([work])
    return report


def replay(seed: int) -> Report:
    """One hub move's schedule (a replay)."""
    return run_many([seed], schedule=_schedule).reports[0]


def run_hub_moves(seeds: Any) -> Batch:
    return run_many(seeds, schedule=_schedule)
