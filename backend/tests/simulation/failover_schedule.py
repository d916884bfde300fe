"""One seeded failover schedule, start to end, and many of them.

`replay(seed)`: a topology and its writers from their own random stream (`Random("failover <seed>")`, so the
switchover schedules of the same seeds are untouched); clients write for a moment; the master is lost — crashed (its
commits in flight never land) or cut off from everyone (they land, unacknowledged) —; a moment later the real
failover (`failover.run_failover`: confirm the loss, drain relay logs, choose, fence first, level, promote, fence,
repoint, verify — with its guard's undo and roll forward) runs in API instance `api-1`, manual or automatic (a
replica must witness the loss), under the schedule's faults (faults.py: an API crash between or inside steps, lost
answers, servers unreachable) and perhaps a replica crashing meanwhile (back after a while, or not). When `api-1`
crashes, `api-2` runs the reconciler's repair (`repairs.repair_failover`) on what the servers show, holding the
cluster's lock; `api-1` perhaps wakes up after it (wake.py). Then clients go
on a little and stop, the crashed replica is back if it comes back, the old master answers again now and then
(restarted: read-only or not as its configuration says; cut off: as it was) and the failover monitor's fencing pass
(`FailoverMonitor._fence`) runs over the servers as the collector would see them, replication settles, and the
failover's invariants are checked (failover_invariants.py).

The database a failover touches (the fenced flag, the suspension of automatic failover, the links) is the in-memory
one of database.py."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

from ferry_control.drivers.fencing import acting_for
from ferry_control.models import HealthState
from ferry_control.schemas.operation import FailoverParams, lenient
from ferry_control.schemas.operation_results import FailoverResult
from ferry_control.services.orchestrator.failover import run_failover
from ferry_control.services.orchestrator.monitor import FailoverMonitor
from ferry_control.services.orchestrator.raise_fences import raise_fences
from ferry_control.services.orchestrator.repairs import RepairContext, repair_failover
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot
from tests.simulation import failover_invariants, wake
from tests.simulation.clock import now
from tests.simulation.cluster import Cluster
from tests.simulation.context import SimContext, SimRunner, registered
from tests.simulation.database import SimDatabase
from tests.simulation.driver import SimDriverFactory
from tests.simulation.faults import FaultPlan, Instance, draw_wake
from tests.simulation.invariants import Outcome
from tests.simulation.proxies import CURRENT
from tests.simulation.schedule import Batch, Report, _faults, _live_outcome, _operate, _Shared, run_many
from tests.simulation.topology import CLUSTER_ID, Topology, generate

#: How many calls (and step starts) of the operation's instance a crash may come at: a failover makes about this
#: many, so crash points spread over all of it, and past it (no crash) now and then.
CRASH_CALLS_MAX = 80


def _cluster_row(cluster_id: int, servers: Any) -> tuple[SimpleNamespace, list[SimpleNamespace]]:
    cluster, rows = registered(cluster_id, servers)
    cluster.failover_suspended_at = cluster.last_failover_at = cluster.last_failover_operation_id = None
    for row in rows:
        row.fenced_at = row.fence_reason = None
        row.label = row.name
    return cluster, rows


async def _reconcile(
    shared: _Shared, settings: Any, cluster: Cluster, topology: Topology, ctx: SimContext, faults: FaultPlan,
    rng: random.Random,
) -> tuple[Outcome, SimRunner]:  # fmt: skip
    instance = Instance("api-2")
    drivers = SimDriverFactory(cluster, instance, faults, rng, mariadb=topology.mariadb)
    runner = SimRunner(settings, drivers, shared.metrics)
    assert ctx.registered is not None
    cluster_row, servers = ctx.registered
    runner.sessionmaker = SimDatabase(cluster_row, servers)
    repair = RepairContext(runner.sessionmaker, settings, runner, ctx.operation_id)  # type: ignore[arg-type]
    result = lenient(FailoverResult, ctx.stored)
    CURRENT.set((instance, cluster, faults))
    snapshot = await ClusterSnapshot.take(cluster_row, servers, drivers, settings.collection.poll_timeout_s)  # type: ignore[arg-type]
    done: list[str] = []
    problems: list[str] = await raise_fences(snapshot)  # as reconcile.py does
    verdict = await repair_failover(repair, snapshot, result, done, problems)
    words = "; ".join(done) + (" | could not: " + "; ".join(problems) if problems else "")
    kind = "incomplete" if problems or verdict == "unknown" else verdict
    return Outcome(kind, "reconcile", words, result.new_master_registered_server_id, False), runner


async def _monitor_fences(settings: Any, cluster: Cluster, topology: Topology, rows: list[SimpleNamespace]) -> None:
    """The failover monitor's fencing pass, over the servers as a collector cycle sees them (another instance,
    without faults)."""
    instance = Instance("api-3")
    calm = FaultPlan(random.Random(0))
    drivers = SimDriverFactory(cluster, instance, calm, random.Random(0), mariadb=topology.mariadb)
    seen = []
    for row in rows:
        server = cluster.servers[row.id]
        health = HealthState.unreachable if server.down else HealthState.healthy
        seen.append(SimpleNamespace(**{**vars(row), "health": health, "read_only": server.read_only}))
    bus = SimpleNamespace(publish=lambda event: None)
    monitor = FailoverMonitor(None, drivers, None, bus, settings)  # type: ignore[arg-type]
    CURRENT.set((instance, cluster, calm))
    await monitor._fence(SimpleNamespace(id=CLUSTER_ID), seen)  # type: ignore[arg-type]


async def _schedule(seed: int, shared: _Shared) -> Report:
    rng = random.Random(f"failover {seed}")
    woken = draw_wake("failover", seed)
    cluster, topology = generate(rng)
    faults = _faults(rng)
    api = Instance("api-1", crash_at=rng.randrange(1, CRASH_CALLS_MAX) if rng.random() < 0.5 else None)
    settings = shared.settings.model_copy(update={"haproxy_admin_sockets": list(topology.proxies)})
    drivers = SimDriverFactory(cluster, api, faults, rng, mariadb=topology.mariadb)
    runner = SimRunner(settings, drivers, shared.metrics)
    cluster_row, rows = _cluster_row(CLUSTER_ID, cluster.servers.values())
    runner.sessionmaker = SimDatabase(cluster_row, rows)
    old = cluster.servers[topology.master]
    sources = {s.id: c.master_address for s in cluster.main() for c in s.connections.values()}
    crashed = rng.random() < 0.6
    automatic = rng.random() < 0.5
    replica_crash_at = rng.uniform(0.0, 0.3) if rng.random() < 0.25 else None
    replica_pick = rng.random()
    replica_back_after = rng.uniform(0.05, 0.5) if rng.random() < 0.5 else None
    old_returns = rng.random() < 0.7
    old_restarts_read_only = rng.random() < 0.5
    report = Report(seed, topology.describe(cluster), None, [], faults.log, kind="failover")

    await asyncio.sleep(rng.uniform(0.02, 0.2))  # clients write
    cluster.go_down(old, now(), crashed=crashed)
    faults.log.append(f"{now():.6f} master {old.name} {'crashed' if crashed else 'cut off from everyone'}")
    await asyncio.sleep(rng.uniform(0.0, 0.2))  # until the loss is noticed

    params = FailoverParams(candidate_registered_server_id=topology.candidate,
                            source_registered_server_id=topology.source,
                            automatic=automatic)  # fmt: skip
    ctx = SimContext(
        runner=runner, operation_id=1, cluster_id=CLUSTER_ID, type="failover",  # type: ignore[arg-type]
        params=params, result=FailoverResult(), dry_run=False, requester="simulation", fencing_token=1,
        instance=api, faults=faults, registered=(cluster_row, rows),
    )  # fmt: skip
    operating = [True]
    loop = asyncio.get_running_loop()
    #: Set once no crashed replica is still to come back (at once when none crashed, or none will).
    replicas_settled = asyncio.Event()
    replicas_settled.set()

    def replica_crashes() -> None:
        if not operating[0]:
            return
        promoted = {ctx.result.new_master_registered_server_id, *cluster.made_writable}
        choices = [s for s in cluster.main() if s is not old and not s.down and s.id not in promoted]
        if not choices:
            return
        crash_a_replica(loop, cluster, faults, choices, replica_pick, replica_back_after, replicas_settled)

    if replica_crash_at is not None:
        loop.call_later(replica_crash_at, replica_crashes)
    CURRENT.set((api, cluster, faults))
    fencing = wake.Fencing(api, ctx, *(cluster_row, rows))
    with acting_for(ctx.acting()):  # its changes carry its fencing token, as runner.py sends them
        work = asyncio.create_task(_operate(ctx, run_failover))
    runner.sessionmaker = fencing.database
    fencing.start(work)
    crashed_api = asyncio.create_task(api.crashed.wait())
    await asyncio.wait({work, crashed_api}, return_when=asyncio.FIRST_COMPLETED)
    runners = [runner]
    if work.done():
        crashed_api.cancel()
        fencing.ended()
        outcome = _live_outcome(ctx, work.result(), True)
    else:
        report.crash = api.crash_point
        # The lease lapses (a paused holder's for real); clients go on writing.
        await fencing.take_over(rng.uniform(0.0, 0.5), wait_for_lease=woken is not None)
        with acting_for(fencing.reconciling()):
            outcome, second = await _reconcile(shared, settings, cluster, topology, ctx, faults, rng)
        runners.append(second)
        await fencing.hand_back(outcome.detail)
        if woken is not None:
            report.woke = await fencing.wake_up(woken, work, faults.log)
    operating[0] = False
    report.outcome = outcome
    report.steps = [f"{s.name} {s.state}" for s in ctx.steps]
    await asyncio.sleep(rng.uniform(0.0, 0.1))  # clients write to whatever is writable now
    cluster.stop_writers()
    await replicas_settled.wait()  # a crashed replica that comes back is back
    if old_returns:
        cluster.come_back(old, now(), read_only=old_restarts_read_only if crashed else None)
        state = "read-only" if old.read_only else "writable"
        faults.log.append(f"{now():.6f} old master {old.name} answers again ({state})")
        await _monitor_fences(settings, cluster, topology, rows)
    await asyncio.sleep(max(topology.delays.values(), default=0) + 1.0)
    cluster.advance(now())
    stale = {proxy for r in runners for proxy, _ in r.stale_proxies.pairs}
    fenced = next(r.fenced for r in rows if r.id == old.id)
    report.violations, report.rpo = failover_invariants.check(
        cluster, topology, outcome, stale, old_fenced=fenced, sources=sources
    )
    report.violations += fencing.check(cluster)
    report.in_flight = fencing.in_flight(cluster)
    if ctx.internal_error is not None:
        report.findings.append(f"the operation ended in an internal error: {ctx.internal_error}")
    api.release()
    await asyncio.wait([work])
    return report


def replay(seed: int) -> Report:
    """One failover schedule (a replay)."""
    return run_many([seed], schedule=_schedule).reports[0]


def run_failovers(seeds: Any) -> Batch:
    return run_many(seeds, schedule=_schedule)


def crash_a_replica(
    loop: asyncio.AbstractEventLoop,
    cluster: Cluster,
    faults: FaultPlan,
    choices: list[Any],
    pick: float,
    back_after: float | None,
    settled: asyncio.Event,
) -> None:
    """Crashes the replica `pick` (a draw in [0, 1)) chooses among `choices`, logged; with `back_after`, it comes
    back that much later, read-only and replicating, and `settled` is clear until then (the hub schedules' too)."""
    victim = choices[int(pick * len(choices))]
    cluster.go_down(victim, now(), crashed=True)
    faults.log.append(f"{now():.6f} replica {victim.name} crashed")
    if back_after is None:
        return

    def back() -> None:
        cluster.come_back(victim, now(), read_only=True)
        faults.log.append(f"{now():.6f} replica {victim.name} is back (read-only, replication started)")
        settled.set()

    settled.clear()
    loop.call_later(back_after, back)
