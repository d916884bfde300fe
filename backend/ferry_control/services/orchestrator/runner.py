"""Runs operations in the background and records them as they go.

`OperationRunner.accepted(...)` (called once the request that created the operation has committed) launches it in
this process, or — in a web process, which runs no operation — announces it as a `pending` operation event for a
worker (services/orchestrator/pickup.py). `launch(id)` starts an asyncio task that loads the operation, claims it
(pending → running, one conditional UPDATE, so of several processes exactly one runs it), calls its executor with
an `OperationContext`, and finishes it: final state, result, error, and — in the same transaction — the release of
the cluster's operation lock. While it runs, a heartbeat renews the lock's lease, so another instance can tell a
live holder from a dead one.

Executors report progress through `ctx.step(name)`: every step start and end is published on the event bus at once
(an `operation` event) and persisted by a writer task within milliseconds (short transactions of its own, off the
critical path), so GET and the SSE stream show steps live.
An executor fails by raising `OperationFailed` (with `undone=True` when it put back what it had changed).

Operations always end well: the executor runs under one guard (`ctx.guarded()`). As it changes servers it registers
what puts them back (`ctx.undo_with(...)`: before a switchover's promotion the undo; from read-only off on its
candidate `settle`, which undoes or rolls forward as the candidate's binlog decides, no_return.py; after it the roll
forward), and
whatever ends it other than success — `OperationFailed`, a driver error, any other exception, cancellation (the
API shutting down), the operation's time bound, or the loss of the cluster's lock — runs that compensation once,
shielded from further cancellation, and records it as a step; it moves servers only while the lock is this
operation's with its fencing token (never taken back over a newer one; a database error or a failed renewal stops
it, saying what it left). The lock carries a fencing token (bumped each time it
is taken): `ctx.step()` checks that this operation still holds the lock with its token before every step (undo and
roll-forward steps excepted) — from memory while the last renewal is recent (`operation_fence_trust_s`: the lock
changes hands only once its lease lapsed), else by reading the lock, so a switchover's window holds no database
round trip — and the heartbeat stops the operation as soon as a renewal finds the lock taken over or the lease
lapsed. What a crash leaves behind is reconciled by `reconcile.py` at the next start of any instance.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Literal, TypeVar

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.metrics import Metrics
from ferry_control.core.testhooks import TestHooks
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.fencing import Acting, acting_for, scope_of
from ferry_control.models import Cluster, OperationState
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.events import OperationEvent
from ferry_control.schemas.operation import PARAMS, RESULTS, OperationParams, OperationStep
from ferry_control.schemas.operation_results import (
    Failure,
    FailureKind,
    OperationHookPayload,
    OperationResult,
    UndoReport,
    WebhookCall,
)
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.orchestrator.failures import LeaseLost as LeaseLost
from ferry_control.services.orchestrator.failures import OperationFailed as OperationFailed
from ferry_control.services.orchestrator.failures import UndoOutcome, failure_of
from ferry_control.services.orchestrator.hooks import call_webhooks
from ferry_control.services.orchestrator.routing import StaleProxies
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)
T = TypeVar("T")
#: The parameters of an operation type (schemas/operation.py).
P = TypeVar("P", bound=OperationParams)
#: The result of an operation type (schemas/operation_results.py).
R = TypeVar("R", bound=OperationResult)


#: Puts back (or completes) what an operation changed so far; returns what it did, in words, or raises
#: OperationFailed when it could not do all of it.
Compensation = Callable[[], Awaitable[str]]


@dataclass
class StepHandle:
    """What the body of `ctx.step()` may set: a detail shown with the step, or that it was skipped."""

    detail: Any = None
    skipped: bool = False


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class OperationContext(Generic[P, R]):
    """One running operation as its executor sees it: `params` is its type's parameters model, validated; `result`
    its type's result model, filled as it goes (persisted and published with the steps)."""

    runner: OperationRunner
    operation_id: int
    cluster_id: int
    type: str
    params: P
    result: R
    dry_run: bool
    requester: str
    steps: list[OperationStep] = field(default_factory=list)
    #: The token this operation took the cluster's lock with (None for dry runs, which take no lock).
    fencing_token: int | None = None
    #: Why the operation was stopped from outside (shutdown, time bound, lost lock), once it was.
    stop_reason: str | None = None
    #: That reason's kind (`Failure.kind`).
    stop_kind: FailureKind | None = None
    #: What the guard did, once the operation ended without success and something was registered to compensate.
    undo_outcome: UndoOutcome | None = None
    _dirty: bool = False
    _writer: asyncio.Task[None] | None = None
    _work: asyncio.Task[None] | None = None
    _compensation: tuple[str, Compensation] | None = None
    #: Why the stored parameters could not be read, when they could not (the operation then fails at once).
    _unreadable: str | None = None
    #: Until when (monotonic clock) a step trusts the lock as last confirmed, without reading it (`check_fence`).
    _fence_trusted_until: float = float("-inf")
    #: Whether step changes wait (`hold_records`) instead of being published and persisted at once.
    _held: bool = False

    @property
    def settings(self) -> Settings:
        return self.runner.settings

    @property
    def drivers(self) -> DriverFactory:
        return self.runner.drivers

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        return self.runner.sessionmaker

    @asynccontextmanager
    async def step(self, name: str, detail: Any = None, *, fenced: bool = True) -> AsyncIterator[StepHandle]:
        """Records a step around the body: running, then passed / failed / skipped with timings and detail. A
        `fenced` step (the default; not an undo) first checks that the operation still holds its cluster."""
        if fenced:
            await self.check_fence()
        handle = StepHandle(detail=detail)
        clock = time.perf_counter()
        record = OperationStep.begin(name, detail)
        self.steps.append(record)
        self.changed()
        try:
            yield handle
        except BaseException as e:
            if name == "preflight" and isinstance(e, OperationFailed) and e.changed is None:
                # A preflight reads and checks (a dry run is one): what stops it is a refusal, nothing changed.
                e.kind, e.changed = "refused", False
            failed = e.message if isinstance(e, OperationFailed) else handle.detail or _describe(e)
            record.end("failed", failed, time.perf_counter() - clock)
            raise
        else:
            record.end("skipped" if handle.skipped else "passed", handle.detail, time.perf_counter() - clock)
        finally:
            self.changed()
        if name == self.runner.test_hooks.pause_after_step:
            self.release_records()
            await self.flush()
            log.warning("operation %s pauses after step %s (FERRY_TEST_PAUSE_AFTER_STEP)", self.id, name)
            await asyncio.Event().wait()

    @property
    def id(self) -> int:
        return self.operation_id

    def lease_confirmed(self, at: float, remaining_s: float) -> None:
        """This operation held its lock at `at` (monotonic clock, taken before the statement that showed it), with
        `remaining_s` of lease left then: steps trust it for `operation_fence_trust_s` (at most half a lease) less
        what of the lease had already gone."""
        lease_s = self.settings.operations.lease_s
        trust_s = min(self.settings.operations.fence_trust_s, lease_s / 2)
        self._fence_trusted_until = max(self._fence_trusted_until, at + remaining_s - (lease_s - trust_s))

    async def check_fence(self) -> None:
        """Raises LeaseLost unless this operation still holds its cluster's lock with its fencing token and a
        lease that has not lapsed (nothing to check for a dry run). Within the trust of the last confirmation
        (`lease_confirmed`) that is known without a read: the lock changes hands only once the lease lapsed, and a
        renewal that finds it taken stops the operation (`stop_reason`)."""
        if self.fencing_token is None:
            return
        if self.stop_reason is not None:
            raise LeaseLost(self.stop_reason, self.stop_kind or "lock_lost")
        checked = time.monotonic()
        if checked < self._fence_trusted_until:
            return
        now = _now()
        async with session_scope(self.sessionmaker) as session:
            lock = await ClusterRepository(session).lock_state(self.cluster_id)
        if lock is None or lock.operation_id != self.operation_id or lock.fencing_token != self.fencing_token:
            holder = "nobody" if lock is None or lock.operation_id is None else f"operation {lock.operation_id}"
            token = None if lock is None else lock.fencing_token
            raise LeaseLost(
                f"lost the cluster's operation lock: it is held by {holder} with fencing token {token} "
                f"(this operation's: {self.fencing_token})"
            )
        if lock.lease_expires_at is None or lock.lease_expires_at <= now:
            raise LeaseLost("lost the cluster's operation lock: its lease lapsed (not renewed in time)")
        self.lease_confirmed(checked, (lock.lease_expires_at - now).total_seconds())

    def acting(self) -> Acting:
        """On whose behalf its work's changes are sent: its cluster's scope and its fencing token, read when each is
        sent (the heartbeat may take the lock again, with a new token); a server that has seen a newer token refuses
        the change (drivers/fencing.py), and that stops the work as a lost lock does."""
        return Acting(scope_of(self.cluster_id), lambda: self.fencing_token, lambda why: self.stop(why, "lock_lost"))

    def stop(self, reason: str, kind: FailureKind) -> None:
        """Stops the operation from outside (its guard then compensates); the first reason given is kept."""
        if self.stop_reason is None:
            self.stop_reason, self.stop_kind = reason, kind
        if self._work is not None and not self._work.done():
            self._work.cancel()

    def undo_with(self, name: str | None, compensation: Compensation | None = None) -> None:
        """Registers what puts back (or completes) what the operation changed so far, replacing what was
        registered; `undo_with(None)` once nothing needs it. `name` is the step it is recorded as."""
        self._compensation = None if name is None or compensation is None else (name, compensation)

    @asynccontextmanager
    async def guarded(self) -> AsyncIterator[None]:
        """Runs the registered compensation when the body ends in any way but success, once (nested guards
        share it), then ends as `OperationFailed` (`undone` when everything was put back) — or, for a
        cancellation, re-raises it with the outcome in `undo_outcome`."""
        try:
            yield
        except BaseException as e:
            registered, self._compensation = self._compensation, None
            if registered is None or isinstance(e, GeneratorExit):
                raise
            reason = self.why(e)
            outcome = await _uncancellable(self._compensate(registered, reason))
            self.undo_outcome = outcome
            self.result.undo = UndoReport(reason=outcome.reason, done=outcome.summary, complete=outcome.complete)
            self.result.failure = failure_of(e, self.stop_kind, outcome)
            if isinstance(e, asyncio.CancelledError):
                raise
            if not isinstance(e, OperationFailed | DriverError):
                log.error("operation %s failed unexpectedly", self.operation_id, exc_info=e)
            raise OperationFailed(outcome.message, undone=outcome.complete and outcome.kind == "undone") from e

    async def _claim(self) -> str | None:
        """Holds the cluster's lock for a compensation; None once held, else why not (then nothing is done). It
        renews the lease when this operation still holds the lock with its fencing token, and takes it again (a new
        token) when it is free with that same token — nobody held it since. A lock with another token was taken
        since, by another operation or by a reconcile that may have repaired these servers and released it: this
        operation never takes it over that newer token. A database error fails closed: without confirming the lock,
        no server is moved. A dry run holds none: None."""
        if self.fencing_token is None:
            return None
        try:
            async with session_scope(self.sessionmaker) as session:
                lock = await ClusterRepository(session).lock_for_operation(self.cluster_id)
                if lock is None:
                    return "the cluster's operation lock is gone (the cluster was deleted)"
                if lock.fencing_token != self.fencing_token or lock.operation_id not in (None, self.operation_id):
                    holder = "nobody now" if lock.operation_id is None else f"operation {lock.operation_id}"
                    return (
                        f"the cluster's operation lock was taken since (fencing token {lock.fencing_token}, held by "
                        f"{holder}; this operation's token: {self.fencing_token}): its holder's reconcile repairs "
                        "what this operation left"
                    )
                if lock.operation_id is None:
                    lock.operation_id, lock.fencing_token = self.operation_id, lock.fencing_token + 1
                    lock.acquired_at = _now()
                lock.lease_expires_at = _now() + timedelta(seconds=self.settings.operations.lease_s)
                self.fencing_token = lock.fencing_token
                return None
        except Exception as e:
            log.exception("operation %s could not confirm its lock before compensating", self.operation_id)
            return (
                f"the cluster's operation lock could not be confirmed ({_describe(e)}): no server is moved without "
                "it; the next reconcile (when the lease lapsed) repairs what this operation left"
            )

    async def _keep_claim(self) -> str:
        """Renews the lease every third of its time while a compensation runs; returns (ending) why the lock is no
        longer known to be this operation's: a renewal that finds it taken over, or that fails."""
        lease_s = self.settings.operations.lease_s
        while True:
            await asyncio.sleep(lease_s / 3)
            try:
                async with session_scope(self.sessionmaker) as session:
                    until = _now() + timedelta(seconds=lease_s)
                    held = await ClusterRepository(session).renew_lease(
                        self.cluster_id, self.operation_id, until, self.fencing_token
                    )
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.exception("renewing the lease of operation %s while compensating failed", self.operation_id)
                return f"its lease could not be renewed ({_describe(e)})"
            if not held:
                return (
                    f"another holder took the cluster's operation lock (fencing token {self.fencing_token} is no "
                    "longer current)"
                )

    def fail(self, error: BaseException) -> None:
        """Records the typed failure of what ended the operation with `error` (unless the guard already did)."""
        if self.result.failure is None:
            self.result.failure = failure_of(error, self.stop_kind, self.undo_outcome)

    def why(self, error: BaseException) -> str:
        """Why the operation stopped, in words."""
        if isinstance(error, asyncio.CancelledError):
            return self.stop_reason or "cancelled"
        if isinstance(error, OperationFailed):
            return error.message
        if isinstance(error, DriverError):
            return f"server {error.address} answered {error.code}: {error.message}"
        return f"internal error: {_describe(error)}"

    async def _compensate(self, registered: tuple[str, Compensation], reason: str) -> UndoOutcome:
        """Runs the compensation; recorded as the step `name` (by the compensation itself, else here). Only while
        this operation still holds its cluster's lock with its fencing token (`_claim`): it renews the lease first
        and keeps renewing it meanwhile, so another instance's reconcile cannot take the cluster and repair the same
        servers from its own snapshot at the same time. When the lock was taken since (a newer token, held or
        released), or cannot be confirmed, nothing is done here and the outcome says so; a renewal that fails
        midway stops the compensation (`_compensate_holding`)."""
        self.release_records()
        name, compensation = registered
        kind = "rolled forward" if name == "roll_forward" else "undone"
        first = len(self.steps)
        record, clock = OperationStep.begin(name), time.perf_counter()
        refused = await self._claim()
        if refused is None:
            outcome = await self._compensate_holding(name, compensation, reason, kind)
            if any(step.name == "roll_forward" for step in self.steps[first:]):
                # A compensation that decides (a switchover's `settle`) rolled forward.
                outcome = replace(outcome, kind="rolled forward")
        else:
            outcome = UndoOutcome(reason, f"{name} not done by this instance: {refused}", False, kind)
            log.warning("operation %s: %s", self.operation_id, outcome.summary)
        if not any(step.name == name for step in self.steps[first:]):
            record.end("passed" if outcome.complete else "failed", outcome.summary, time.perf_counter() - clock)
            self.steps.append(record)
            self.changed()
        return outcome

    async def _compensate_holding(self, name: str, compensation: Compensation, reason: str, kind: str) -> UndoOutcome:
        """Runs the compensation while renewing the lease; the first renewal that fails stops it at once (its moves
        cancelled where they wait), and the outcome says so and what was left: the compensation's steps so far."""
        first = len(self.steps)
        work = asyncio.ensure_future(compensation())
        renewing = asyncio.create_task(self._keep_claim())
        try:
            await asyncio.wait({work, renewing}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                lost = renewing.result()
                work.cancel()
                await asyncio.wait({work})
                done = [f"{s.name} {s.state}" for s in self.steps[first:]] or ["nothing"]
                summary = (
                    f"{name} stopped part-way: {lost}; no server is moved past that. Done before it stopped: "
                    f"{', '.join(done)}; the rest is left as it is, for the lock's next holder's reconcile to repair"
                )
                log.error("operation %s: %s", self.operation_id, summary)
                return UndoOutcome(reason, summary, False, kind)
            return UndoOutcome(reason, work.result(), True, kind)
        except OperationFailed as e:
            return UndoOutcome(reason, e.message, False, kind)
        except Exception as e:
            log.exception("the %s of operation %s failed", name, self.operation_id)
            return UndoOutcome(reason, f"{name} failed: {_describe(e)}", False, kind)
        finally:
            renewing.cancel()
            if not work.done():
                work.cancel()

    async def hold_records(self) -> None:
        """Once what was recorded so far is written, and until `release_records`, step changes are neither published
        nor persisted: a switchover's write-unavailability window then holds nothing but its own moves — a step
        record written, or an event that every open dashboard's process fans out, there takes CPU the servers'
        answers wait for. What a crash there leaves is known from the plan saved before (`ctx.save()`), not from
        these records."""
        self._held = True
        await self.flush()

    def release_records(self) -> None:
        """Ends `hold_records`: every change since is published and persisted as one (a no-op when not held)."""
        if self._held:
            self._held = False
            self.changed()

    def changed(self) -> None:
        """Steps or result changed: published at once, persisted by a writer task (short transactions of its own,
        coalescing changes that arrive meanwhile), so a database commit is never inside a switchover's window —
        unless held (`hold_records`), then both wait until released."""
        if self._held:
            return
        self.runner.publish(self.cluster_id, self.operation_id, self.type, OperationState.running, self.steps)
        self._dirty = True
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_while_dirty())

    async def _write_while_dirty(self) -> None:
        while self._dirty:
            self._dirty = False
            try:
                async with session_scope(self.sessionmaker) as session:
                    operation = await OperationRepository(session).get_any(self.operation_id)
                    assert operation is not None
                    operation.steps = [s.stored() for s in self.steps]
                    operation.result = self.result.stored()
            except Exception:
                log.exception("recording the steps of operation %s failed", self.operation_id)

    async def flush(self) -> None:
        """Waits until everything recorded so far is persisted."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def save(self) -> None:
        """Publishes and persists now."""
        self.changed()
        await self.flush()

    async def snapshot(self) -> ClusterSnapshot:
        async with session_scope(self.sessionmaker) as session:
            cluster = await ClusterRepository(session).get(self.cluster_id)
            if cluster is None:
                # changed stays unknown: read at any point of an operation (deleted only once its lease lapsed).
                raise OperationFailed(f"cluster {self.cluster_id} was deleted")
            servers = list(await ServerRepository(session).list_for_cluster(self.cluster_id))
        return await ClusterSnapshot.take(cluster, servers, self.drivers, self.settings.collection.poll_timeout_s)

    async def cluster(self) -> Cluster:
        async with session_scope(self.sessionmaker) as session:
            cluster = await ClusterRepository(session).get(self.cluster_id)
            if cluster is None:
                # changed stays unknown: read at any point of an operation (deleted only once its lease lapsed).
                raise OperationFailed(f"cluster {self.cluster_id} was deleted")
            return cluster

    def payload(self, stage: Literal["pre", "post"], **extra: Any) -> OperationHookPayload:
        """What the webhooks of `stage` are POSTed: the operation, and `extra` (OperationHookPayload's fields)."""
        return OperationHookPayload(
            stage=stage, operation_id=self.operation_id, cluster_id=self.cluster_id, type=self.type,
            params=self.params, requester=self.requester, **extra,
        )  # fmt: skip

    async def pre_hooks(
        self, *, old_master_registered_server_id: int | None = None, new_master_registered_server_id: int | None = None
    ) -> None:
        """Calls the pre-operation webhooks (settings', then the cluster's); any failure aborts, nothing changed."""
        cluster = await self.cluster()
        urls = [*self.settings.webhooks.pre_operation, *(cluster.pre_operation_webhooks or [])]
        async with self.step("pre_hooks") as step:
            if not urls:
                step.skipped = True
                step.detail = "no pre-operation webhooks configured"
                return
            moves = {
                "old_master_registered_server_id": old_master_registered_server_id,
                "new_master_registered_server_id": new_master_registered_server_id,
            }
            extra = {k: v for k, v in moves.items() if v is not None}
            outcomes = await call_webhooks(urls, self.payload("pre", **extra).body(), self.settings)
            step.detail = {"calls": [o.as_dict() for o in outcomes]}
            failed = [o for o in outcomes if not o.ok]
            if failed:
                raise OperationFailed(
                    "a pre-operation webhook refused or failed, nothing was changed: "
                    + "; ".join(f"{o.url}: {o.error}" for o in failed),
                    kind="refused",
                    changed=False,
                )


def _describe(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    return f"{type(error).__name__}: {error}"


async def _uncancellable(coroutine: Awaitable[T]) -> T:
    """Runs the coroutine to its end in a task of its own, whatever cancellations the caller receives meanwhile
    (they are passed on once it is done)."""
    task = asyncio.ensure_future(coroutine)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
    if cancelled:
        current = asyncio.current_task()
        if current is not None:
            current.cancel()
    return task.result()


Executor = Callable[[OperationContext[Any, Any]], Awaitable[None]]


class OperationRunner:
    """Owns the background tasks of the operations this API instance started."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: DriverFactory,
        bus: EventBus,
        settings: Settings,
        metrics: Metrics,
        *,
        executes: bool = True,
        test_hooks: TestHooks | None = None,
    ):
        self.sessionmaker = sessionmaker
        self.drivers = drivers
        self.bus = bus
        self.settings = settings
        self.metrics = metrics
        #: False in a web process: accepted operations are announced for a worker instead of run here.
        self.executes = executes
        #: The fault tests' hooks (core/testhooks.py): none outside the `test` environment.
        self.test_hooks = test_hooks or TestHooks.model_construct()
        #: Proxies that missed a move of a cluster's writer (routing.py), brought in line after the next cycle.
        self.stale_proxies = StaleProxies()
        self.executors: dict[str, Executor] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        #: The contexts of the operations running here (a cancellation stops one through its `stop`).
        self._contexts: dict[int, OperationContext[Any, Any]] = {}
        #: Called with (cluster_id, operation_id, final state) when an operation ends (drills use it).
        self.on_finish: list[Callable[[int, int, OperationState], Awaitable[None]]] = []

    def register(self, type_: str, executor: Executor) -> None:
        self.executors[type_] = executor

    def accepted(self, cluster_id: int, operation_id: int, type_: str) -> None:
        """An operation was committed as pending: run it here, or announce it to the workers."""
        if self.executes:
            self.launch(operation_id)
        else:
            self.publish(cluster_id, operation_id, type_, OperationState.pending, [])

    def launch(self, operation_id: int) -> None:
        if operation_id not in self._tasks:
            task = asyncio.create_task(self._run(operation_id), name=f"ferry-operation-{operation_id}")
            self._tasks[operation_id] = task
            task.add_done_callback(lambda _: self._tasks.pop(operation_id, None))

    async def wait(self, operation_id: int) -> None:
        """Waits for an operation this instance runs (returns at once for others)."""
        task = self._tasks.get(operation_id)
        if task is not None:
            await asyncio.shield(task)

    def cancel(self, operation_id: int, requester: str) -> bool:
        """Stops an operation running here as its other stops do (its guard compensates; the failure's kind is
        `cancelled`); False when it does not run here (the process running it stops it at its next lease renewal,
        from the request recorded on its row)."""
        ctx = self._contexts.get(operation_id)
        if ctx is None:
            return False
        ctx.stop(f"cancelled by {requester}", "cancelled")
        return True

    @property
    def running(self) -> list[int]:
        return list(self._tasks)

    async def shutdown(self) -> None:
        """Lets running operations finish within the grace period, then cancels them (they end as failed)."""
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.settings.operations.shutdown_grace_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def publish(
        self, cluster_id: int, operation_id: int, type_: str, state: OperationState, steps: list[OperationStep]
    ) -> None:
        steps_now = [s.model_copy() for s in steps]  # the records change as the operation goes on
        self.bus.publish(
            ClusterEvent.of(
                cluster_id, OperationEvent(operation_id=operation_id, type=type_, state=state.value, steps=steps_now)
            )
        )

    async def _run(self, operation_id: int) -> None:
        async with session_scope(self.sessionmaker) as session:
            operation = await OperationRepository(session).get_any(operation_id)
            if operation is None or operation.state != OperationState.pending:
                return
            asked, asked_at = time.monotonic(), _now()
            lock = None if operation.dry_run else await ClusterRepository(session).lock_state(operation.cluster_id)
            unreadable = None
            try:
                params = PARAMS.get(operation.type, OperationParams).model_validate(operation.params or {})
            except ValidationError as e:  # a row no request could have written: the operation fails, unchanged
                params, unreadable = None, f"its parameters could not be read ({e})"
            ctx: OperationContext[Any, Any] = OperationContext(
                runner=self,
                operation_id=operation.id,
                cluster_id=operation.cluster_id,
                type=operation.type,
                params=params,
                result=RESULTS.get(operation.type, OperationResult)(),
                dry_run=operation.dry_run,
                requester=operation.requester,
            )
            ctx._unreadable = unreadable
            if lock is not None and lock.operation_id != operation.id:
                # Its lock was taken over (by a reconcile of an instance that thought it dead) before it began.
                operation.state = OperationState.failed
                operation.error = "lost the cluster's operation lock before it began; nothing was changed"
                ctx.result.failure = Failure(kind="lock_lost", changed=False)
                operation.result = ctx.result.stored()
                operation.finished_at = _now()
                return
            ctx.fencing_token = None if lock is None else lock.fencing_token
            if lock is not None:
                # The lease ran from the request's commit: renewed with the claim, in its transaction, so a start
                # delayed on a busy instance begins with a whole lease. A reconcile that took the cluster meanwhile
                # changed the fencing token: the renewal finds nothing, and that reconcile records the operation.
                lease_s = self.settings.operations.lease_s
                until = asked_at + timedelta(seconds=lease_s)
                if not await ClusterRepository(session).renew_lease(
                    operation.cluster_id, operation.id, until, ctx.fencing_token
                ):
                    return
                ctx.lease_confirmed(asked, lease_s)
            if not await OperationRepository(session).claim(operation.id, _now()):
                return  # another process claimed it first
        self.publish(ctx.cluster_id, ctx.operation_id, ctx.type, OperationState.running, [])
        self._contexts[operation_id] = ctx
        heartbeat = None if ctx.dry_run else asyncio.create_task(self._heartbeat(ctx))
        bound = asyncio.get_running_loop().call_later(
            self.settings.operations.timeout_s,
            ctx.stop,
            f"timed out: the operation ran longer than its bound of {self.settings.operations.timeout_s} s",
            "timed_out",
        )
        started = time.perf_counter()
        state, error = OperationState.succeeded, None
        cancelled = False
        with acting_for(ctx.acting()):
            ctx._work = asyncio.create_task(self._guarded(ctx), name=f"ferry-operation-{operation_id}-work")
        try:
            try:
                await asyncio.shield(ctx._work)
            except asyncio.CancelledError:
                if ctx._work.done() and ctx._work.cancelled() and ctx.stop_reason is not None:
                    raise  # the work was stopped from inside this instance (lease, bound): handled below
                # This task was cancelled: the API instance shuts down. The work is stopped, its guard undoes.
                cancelled = True
                ctx.stop("interrupted: the API instance running it shut down", "shutdown")
                await _uncancellable(asyncio.wait([ctx._work]))
            ctx._work.result()
        except OperationFailed as e:
            state, error = (OperationState.undone if e.undone else OperationState.failed), e.message
            ctx.fail(e)
        except DriverError as e:
            state, error = OperationState.failed, ctx.why(e)
            ctx.fail(e)
        except asyncio.CancelledError as e:
            outcome = ctx.undo_outcome
            if outcome is not None:
                undone = outcome.complete and outcome.kind == "undone"
                state, error = (OperationState.undone if undone else OperationState.failed), outcome.message
            else:
                state, error = OperationState.failed, ctx.stop_reason or "cancelled"
            ctx.fail(e)
        except Exception as e:
            log.exception("operation %s failed unexpectedly", operation_id)
            state, error = OperationState.failed, ctx.why(e)
            ctx.fail(e)
        finally:
            bound.cancel()
            self._contexts.pop(operation_id, None)
            if heartbeat is not None:
                heartbeat.cancel()
        if not ctx.dry_run:
            await _uncancellable(self._post_hooks(ctx, state, error))
        await _uncancellable(self._finish(ctx, state, error))
        self.metrics.operation_seconds.labels(ctx.type, state.value).observe(time.perf_counter() - started)
        for callback in self.on_finish:
            await callback(ctx.cluster_id, ctx.operation_id, state)
        if cancelled:
            raise asyncio.CancelledError

    async def _guarded(self, ctx: OperationContext[Any, Any]) -> None:
        executor = self.executors.get(ctx.type)
        if executor is None:
            raise OperationFailed(f"no executor for operations of type {ctx.type!r}", kind="internal", changed=False)
        if ctx._unreadable is not None:
            raise OperationFailed(f"{ctx._unreadable}; nothing was changed", kind="refused", changed=False)
        async with ctx.guarded():
            await executor(ctx)

    async def _heartbeat(self, ctx: OperationContext[Any, Any]) -> None:
        """Renews the lease every third of its time while the operation runs; stops the operation once the lock
        was taken over (another fencing token) or could not be renewed before the lease lapsed."""
        lease_s = self.settings.operations.lease_s
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(lease_s / 3)
            asked = time.monotonic()
            try:
                async with session_scope(self.sessionmaker) as session:
                    until = _now() + timedelta(seconds=lease_s)
                    held = await ClusterRepository(session).renew_lease(
                        ctx.cluster_id, ctx.operation_id, until, ctx.fencing_token
                    )
                    operation = await OperationRepository(session).get_any(ctx.operation_id)
                    cancelled_by = None if operation is None else operation.cancel_requested_by
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.exception("renewing the lease of operation %s failed", ctx.operation_id)
                if time.monotonic() - renewed >= lease_s:
                    ctx.stop(
                        f"lost the cluster's operation lock: not renewed for {lease_s} s ({_describe(e)})", "lock_lost"
                    )
                    return
                continue
            if not held:
                log.warning("operation %s no longer holds cluster %s", ctx.operation_id, ctx.cluster_id)
                ctx.stop(
                    "lost the cluster's operation lock: another holder took it over (fencing token "
                    f"{ctx.fencing_token} is no longer current)",
                    "lock_lost",
                )
                return
            renewed = time.monotonic()
            ctx.lease_confirmed(asked, lease_s)
            if cancelled_by is not None:
                ctx.stop(f"cancelled by {cancelled_by}", "cancelled")
                return

    async def _post_hooks(self, ctx: OperationContext[Any, Any], state: OperationState, error: str | None) -> None:
        try:
            cluster = await ctx.cluster()
        except OperationFailed:
            return
        urls = [*self.settings.webhooks.post_operation, *(cluster.post_operation_webhooks or [])]
        if not urls:
            return
        async with ctx.step("post_hooks") as step:
            outcomes = await call_webhooks(
                urls,
                ctx.payload("post", state=state.value, error=error, result=ctx.result).body(),
                ctx.settings,
            )
            step.detail = {"calls": [o.as_dict() for o in outcomes]}
        failed = [o for o in outcomes if not o.ok]
        if failed:
            ctx.steps[-1].state = "failed"
            ctx.result.post_hook_failures = [WebhookCall.model_validate(o.as_dict()) for o in failed]
            await ctx.save()

    async def _finish(self, ctx: OperationContext[Any, Any], state: OperationState, error: str | None) -> None:
        await ctx.flush()  # the last step writes land before the final one
        async with session_scope(self.sessionmaker) as session:
            operation = await OperationRepository(session).get_any(ctx.operation_id)
            assert operation is not None
            if operation.state == OperationState.interrupted:
                # Another instance took it for dead (its lease lapsed) and reconciled it meanwhile: its record of
                # the servers stands.
                log.warning("operation %s was reconciled by another instance; its end here (%s) is not recorded",
                            ctx.operation_id, state.value)  # fmt: skip
                return
            operation.state = state
            operation.error = error
            operation.steps = [s.stored() for s in ctx.steps]
            operation.result = ctx.result.stored()
            operation.finished_at = _now()
            if not ctx.dry_run:
                await ClusterRepository(session).release(ctx.cluster_id, ctx.operation_id, ctx.fencing_token)
        self.publish(ctx.cluster_id, ctx.operation_id, ctx.type, state, ctx.steps)
