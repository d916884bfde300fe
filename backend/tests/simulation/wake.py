"""The lock's side of a schedule, and an instance waking up after its cluster was taken over.

`Fencing.start`: the operation's instance holds the cluster's lock (token 1, database.py's `LockStore`) and the
runner's own heartbeat renews it. `take_over` / `hand_back`: a reconcile by another instance takes the lock as
reconcile.py does (the same operation, the next fencing token, a fresh lease) once the crashed holder's lease lapsed,
and releases it with the operation recorded `interrupted`. `wake_up`: the paused instance wakes (faults.py
`WakeUp`), perhaps while a second operation of the other instance holds the lock (the next token again; it reads,
moves nothing), its pending call and later steps go on until the real fencing stops them, and the runner's `_finish`
records its end — or, the operation already reconciled, leaves the record as the reconcile left it.

`check`: the fencing invariant — every change to a server or proxy after the takeover by an instance that runs
operations is by the one holding the lock then (the woken instance's call pending at its pause excepted: it was sent
past every check; ferryd servers refuse it — the driver keeps their fencing tokens, raised by the reconcile —, MariaDB
servers and proxies keep no token and take it: known.py), and the operation's record is the reconcile's, never the
woken instance's."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.drivers.fencing import Acting, scope_of
from ferry_control.models import OperationState
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.services.orchestrator.runner import OperationRunner
from tests.simulation.clock import now, virtual_now
from tests.simulation.cluster import Cluster
from tests.simulation.context import SimContext
from tests.simulation.database import LockStore, SimDatabase
from tests.simulation.faults import Instance, WakeUp
from tests.simulation.invariants import Violation

#: The lease of the simulated lock (virtual seconds): short, so a paused holder's lease lapses soon (steps trust a
#: confirmation for half of it, the heartbeat renews every third).
LEASE_S = 1.0
#: The second operation's id.
SECOND = 2


class Fencing:
    """The lock of one schedule's cluster: the operation's instance holds it (token 1, renewed by the runner's own
    heartbeat); after its crash another instance's reconcile takes it over and hands it back; perhaps the first
    instance wakes up then."""

    def __init__(self, api: Instance, ctx: SimContext, cluster_row: Any, rows: list[Any], links: Any = None) -> None:
        self.api = api
        self.ctx = ctx
        self.store = LockStore.held_by(ctx.cluster_id, ctx.operation_id, api.name, LEASE_S)
        #: The operation's instance's database (its runner's sessionmaker).
        self.database = SimDatabase(cluster_row, rows, links, store=self.store, instance=api)
        self.other: SimDatabase | None = None
        self.taken_at: float | None = None
        self._token = 0
        self._heartbeat: asyncio.Task[None] | None = None

    def start(self, work: asyncio.Task[Any]) -> None:
        """The operation runs holding its cluster (as `OperationRunner._run` finds it: confirmed now)."""
        self.ctx.lease_confirmed(now(), LEASE_S)
        self._heartbeat = self.ctx.start_heartbeat(work)

    def ended(self) -> None:
        """The operation's work ended: its heartbeat with it."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()

    async def take_over(self, lapse_s: float, *, wait_for_lease: bool) -> None:
        """`lapse_s` after the crash (after the lease lapsed, with `wait_for_lease`: a paused holder may still wake),
        another instance's reconcile takes the lock."""
        self.other = self.database.bound(Instance("api-2"))
        if wait_for_lease:
            await lease_lapsed(self.store)
        await asyncio.sleep(lapse_s)
        self.taken_at = now()
        self._token = await take(self.other, self.ctx.operation_id)

    def reconciling(self) -> Acting:
        """On whose behalf the reconcile's repair changes the servers (its fencing token), as reconcile.py sets it."""
        return Acting(scope_of(self.ctx.cluster_id), lambda: self._token)

    async def hand_back(self, detail: str) -> None:
        assert self.other is not None
        await hand_back(self.other, self.ctx.operation_id, self._token, f"interrupted; reconciled: {detail}")

    async def wake_up(self, wake: WakeUp, work: asyncio.Task[str | None], log: list[str]) -> str:
        """How the woken instance's operation ended (its state, and its failure's kind)."""
        assert self.other is not None
        ended = await wake_up(wake, self.api, self.ctx, work, self.other, log)
        self.ended()
        return ended

    def check(self, cluster: Cluster) -> list[Violation]:
        if self.taken_at is None:
            return []
        return check(cluster, self.store, self.ctx.operation_id, self.taken_at)

    def in_flight(self, cluster: Cluster) -> list[str]:
        """The woken instance's change pending at its pause that landed after the takeover, if any (in words)."""
        taken = self.taken_at
        return [
            f"at {c.at:.6f} s {c.by}'s {c.call} on {c.target}, pending at its pause, landed after the takeover"
            for c in cluster.changes if taken is not None and c.in_flight and c.at >= taken
        ]  # fmt: skip


async def lease_lapsed(store: LockStore) -> None:
    """Waits until the lock's lease has lapsed (its holder paused: nobody renews it)."""
    expires = store.lock.lease_expires_at
    if expires is not None and expires > virtual_now():
        await asyncio.sleep((expires - virtual_now()).total_seconds() + 1e-6)


async def take(database: SimDatabase, operation_id: int) -> int:
    """Takes the cluster's lock for `operation_id` as reconcile.py does: the next fencing token, a fresh lease."""
    async with session_scope(database) as session:  # type: ignore[arg-type]
        lock = await ClusterRepository(session).lock_for_operation(database.store.lock.cluster_id)  # type: ignore[union-attr]
        assert lock is not None
        lock.operation_id = operation_id
        lock.fencing_token += 1
        lock.acquired_at = virtual_now()
        lock.lease_expires_at = virtual_now() + timedelta(seconds=LEASE_S)
        return int(lock.fencing_token)


async def release(database: SimDatabase, operation_id: int, token: int) -> None:
    async with session_scope(database) as session:  # type: ignore[arg-type]
        await ClusterRepository(session).release(database.store.lock.cluster_id, operation_id, token)  # type: ignore[union-attr]


async def hand_back(database: SimDatabase, operation_id: int, token: int, error: str) -> None:
    """The reconcile's end: the operation recorded interrupted, the lock released."""
    assert database.store is not None
    row = database.store.operations[operation_id]
    row.state, row.error = "interrupted", error
    await release(database, operation_id, token)


async def _hold(database: SimDatabase, token: int) -> None:
    """The second operation's heartbeat: renews its lease every third of it."""
    while True:
        await asyncio.sleep(LEASE_S / 3)
        async with session_scope(database) as session:  # type: ignore[arg-type]
            until = virtual_now() + timedelta(seconds=LEASE_S)
            await ClusterRepository(session).renew_lease(database.store.lock.cluster_id, SECOND, until, token)  # type: ignore[union-attr]


async def wake_up(
    wake: WakeUp, api: Instance, ctx: SimContext, work: asyncio.Task[str | None], other: SimDatabase, log: list[str]
) -> str:  # fmt: skip
    """The paused instance wakes up (perhaps while a second operation holds the cluster) and goes on until its work
    ends; its end is recorded by the runner's `_finish`."""
    assert other.store is not None
    holding = None
    if wake.second_operation:
        other.store.operations[SECOND] = type(other.store.operations[ctx.operation_id])(id=SECOND, state="running")
        token = await take(other, SECOND)
        holding = asyncio.create_task(_hold(other, token))
        log.append(f"{now():.6f} {other.instance_name} runs operation {SECOND} (fencing token {token})")
    await asyncio.sleep(wake.after_s)
    api.wake(now())
    log.append(f"{now():.6f} {api.name} wakes up")
    await asyncio.wait([work])
    outcome = ctx.undo_outcome
    if work.cancelled():
        # Stopped by its heartbeat: runner.py `_run` reads the guard's outcome, and types the failure (`ctx.fail`).
        error: str | None = outcome.message if outcome is not None else ctx.stop_reason or "cancelled"
        ctx.fail(asyncio.CancelledError())
    else:
        error = work.result()
    if error is None:
        state = "succeeded"
    elif outcome is not None and outcome.complete and outcome.kind == "undone":
        state = "undone"
    else:
        state = "failed"
    kind = ctx.result.failure.kind if ctx.result.failure is not None else None
    ended = state + (f" ({kind})" if kind else "") + (" while operation 2 ran" if wake.second_operation else "")
    log.append(f"{now():.6f} {api.name}'s operation ends {ended}: {error}")
    await OperationRunner._finish(ctx.runner, ctx, OperationState(state), error)  # type: ignore[arg-type]
    if holding is not None:
        holding.cancel()
        await asyncio.wait([holding])
        await release(other, SECOND, other.store.lock.fencing_token)
        other.store.operations[SECOND].state = "succeeded"
    return ended


def check(cluster: Cluster, store: LockStore, operation_id: int, taken_at: float) -> list[Violation]:
    """The fencing invariant after a takeover at `taken_at`."""
    found = []
    operating = set(store.owners.values())  # not the failover monitor's fencing: it takes no lock, by design
    for change in cluster.changes:
        if change.at < taken_at or change.in_flight or change.by not in operating:
            continue
        holder = store.holder_at(change.at)
        if change.by != holder:
            held = "free" if holder is None else f"{holder}'s"
            found.append(Violation(
                "fencing", f"at {change.at:.6f} s {change.by} changed {change.target} ({change.call}) after the "
                f"takeover at {taken_at:.6f} s, while the lock was {held}",
            ))  # fmt: skip
    row = store.operations[operation_id]
    if row.state != "interrupted":
        found.append(Violation("record", f"the reconciled operation's record was overwritten: it ends {row.state}"))
    return found


def woken(reports: Any) -> str:
    """The sweep's wake-ups in a line: how many, and how the woken instances' operations ended."""
    ends: dict[str, int] = {}
    for report in reports:
        if report.woke is not None:
            ends[report.woke] = ends.get(report.woke, 0) + 1
    landed = sum(1 for r in reports if r.in_flight)
    return (
        f"{sum(ends.values())} woke up after a takeover (their operations: {dict(sorted(ends.items()))}; a call "
        f"pending at the pause landed after it in {landed})"
    )
