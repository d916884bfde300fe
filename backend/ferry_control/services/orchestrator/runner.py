"""Runs operations in the background and records them as they go.

`OperationRunner.launch(id)` (called once the request that created the operation has committed) starts an asyncio
task that loads the operation, marks it running, calls its executor with an `OperationContext`, and finishes it:
final state, result, error, and — in the same transaction — the release of the cluster's operation lock. While it
runs, a heartbeat renews the lock's lease, so another API instance can tell a live holder from a dead one.

Executors report progress through `ctx.step(name)`: every step start and end is published on the event bus at once
(an `operation` event) and persisted by a writer task within milliseconds (short transactions of its own, off the
critical path), so GET and the SSE stream show steps live.
An executor fails by raising `OperationFailed` (with `undone=True` when it put back what it had changed).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.metrics import Metrics
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import Cluster, OperationState
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.orchestrator.hooks import call_webhooks
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)


class OperationFailed(Exception):
    """Ends an operation as failed (or undone, when what it changed was put back), with a message for people."""

    def __init__(self, message: str, *, undone: bool = False):
        super().__init__(message)
        self.message = message
        self.undone = undone


@dataclass
class StepHandle:
    """What the body of `ctx.step()` may set: a detail shown with the step, or that it was skipped."""

    detail: Any = None
    skipped: bool = False


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@dataclass
class OperationContext:
    """One running operation as its executor sees it."""

    runner: OperationRunner
    operation_id: int
    cluster_id: int
    type: str
    params: dict[str, Any]
    dry_run: bool
    requester: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    _dirty: bool = False
    _writer: asyncio.Task[None] | None = None

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
    async def step(self, name: str, detail: Any = None) -> AsyncIterator[StepHandle]:
        """Records a step around the body: running, then passed / failed / skipped with timings and detail."""
        handle = StepHandle(detail=detail)
        started = _now()
        clock = time.perf_counter()
        record: dict[str, Any] = {
            "name": name, "state": "running", "started_at": _iso(started), "finished_at": None,
            "duration_s": None, "detail": detail,
        }  # fmt: skip
        self.steps.append(record)
        self.changed()
        try:
            yield handle
        except BaseException as e:
            record["state"] = "failed"
            record["detail"] = e.message if isinstance(e, OperationFailed) else handle.detail or _describe(e)
            raise
        else:
            record["state"] = "skipped" if handle.skipped else "passed"
            record["detail"] = handle.detail
        finally:
            record["finished_at"] = _iso(_now())
            record["duration_s"] = round(time.perf_counter() - clock, 6)
            self.changed()

    def changed(self) -> None:
        """Steps or result changed: published at once, persisted by a writer task (short transactions of its own,
        coalescing changes that arrive meanwhile), so a database commit is never inside a switchover's window."""
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
                    operation.steps = [dict(s) for s in self.steps]
                    operation.result = dict(self.result)
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
                raise OperationFailed(f"cluster {self.cluster_id} was deleted")
            servers = list(await ServerRepository(session).list_for_cluster(self.cluster_id))
        return await ClusterSnapshot.take(cluster, servers, self.drivers, self.settings.poll_timeout_s)

    async def cluster(self) -> Cluster:
        async with session_scope(self.sessionmaker) as session:
            cluster = await ClusterRepository(session).get(self.cluster_id)
            if cluster is None:
                raise OperationFailed(f"cluster {self.cluster_id} was deleted")
            return cluster

    def payload(self, stage: str, **extra: Any) -> dict[str, Any]:
        return {
            "stage": stage, "operation_id": self.operation_id, "cluster_id": self.cluster_id, "type": self.type,
            "params": self.params, "requester": self.requester, **extra,
        }  # fmt: skip

    async def pre_hooks(self, **extra: Any) -> None:
        """Calls the pre-operation webhooks (settings', then the cluster's); any failure aborts, nothing changed."""
        cluster = await self.cluster()
        urls = [*self.settings.pre_operation_webhooks, *(cluster.pre_operation_webhooks or [])]
        async with self.step("pre_hooks") as step:
            if not urls:
                step.skipped = True
                step.detail = "no pre-operation webhooks configured"
                return
            outcomes = await call_webhooks(urls, self.payload("pre", **extra), self.settings.webhook_timeout_s)
            step.detail = {"calls": [o.as_dict() for o in outcomes]}
            failed = [o for o in outcomes if not o.ok]
            if failed:
                raise OperationFailed(
                    "a pre-operation webhook refused or failed, nothing was changed: "
                    + "; ".join(f"{o.url}: {o.error}" for o in failed)
                )


def _describe(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    return f"{type(error).__name__}: {error}"


Executor = Callable[[OperationContext], Awaitable[None]]


class OperationRunner:
    """Owns the background tasks of the operations this API instance started."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: DriverFactory,
        bus: EventBus,
        settings: Settings,
        metrics: Metrics,
    ):
        self.sessionmaker = sessionmaker
        self.drivers = drivers
        self.bus = bus
        self.settings = settings
        self.metrics = metrics
        self.executors: dict[str, Executor] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        #: Called with (cluster_id, operation_id, final state) when an operation ends (drills use it).
        self.on_finish: list[Callable[[int, int, OperationState], Awaitable[None]]] = []

    def register(self, type_: str, executor: Executor) -> None:
        self.executors[type_] = executor

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

    @property
    def running(self) -> list[int]:
        return list(self._tasks)

    async def shutdown(self) -> None:
        """Lets running operations finish within the grace period, then cancels them (they end as failed)."""
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.settings.operation_shutdown_grace_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def publish(
        self, cluster_id: int, operation_id: int, type_: str, state: OperationState, steps: list[dict[str, Any]]
    ) -> None:
        self.bus.publish(
            ClusterEvent(
                cluster_id,
                "operation",
                {"operation_id": operation_id, "type": type_, "state": state.value, "steps": [dict(s) for s in steps]},
            )
        )

    async def _run(self, operation_id: int) -> None:
        async with session_scope(self.sessionmaker) as session:
            operation = await OperationRepository(session).get_any(operation_id)
            if operation is None or operation.state != OperationState.pending:
                return
            operation.state = OperationState.running
            operation.started_at = _now()
            ctx = OperationContext(
                runner=self,
                operation_id=operation.id,
                cluster_id=operation.cluster_id,
                type=operation.type,
                params=dict(operation.params or {}),
                dry_run=operation.dry_run,
                requester=operation.requester,
            )
        self.publish(ctx.cluster_id, ctx.operation_id, ctx.type, OperationState.running, [])
        heartbeat = None if ctx.dry_run else asyncio.create_task(self._heartbeat(ctx))
        started = time.perf_counter()
        state, error = OperationState.succeeded, None
        cancelled = False
        try:
            executor = self.executors.get(ctx.type)
            if executor is None:
                raise OperationFailed(f"no executor for operations of type {ctx.type!r}")
            await executor(ctx)
        except OperationFailed as e:
            state, error = (OperationState.undone if e.undone else OperationState.failed), e.message
        except DriverError as e:
            state, error = OperationState.failed, f"server {e.address} answered {e.code}: {e.message}"
        except asyncio.CancelledError:
            cancelled = True
            state, error = OperationState.failed, "interrupted: the API instance running it shut down"
        except Exception as e:
            log.exception("operation %s failed unexpectedly", operation_id)
            state, error = OperationState.failed, f"internal error: {_describe(e)}"
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
        if not ctx.dry_run:
            await asyncio.shield(self._post_hooks(ctx, state, error))
        await asyncio.shield(self._finish(ctx, state, error))
        self.metrics.operation_seconds.labels(ctx.type, state.value).observe(time.perf_counter() - started)
        for callback in self.on_finish:
            await callback(ctx.cluster_id, ctx.operation_id, state)
        if cancelled:
            raise asyncio.CancelledError

    async def _heartbeat(self, ctx: OperationContext) -> None:
        interval = self.settings.operation_lease_s / 3
        while True:
            await asyncio.sleep(interval)
            try:
                async with session_scope(self.sessionmaker) as session:
                    until = _now() + timedelta(seconds=self.settings.operation_lease_s)
                    if not await ClusterRepository(session).renew_lease(ctx.cluster_id, ctx.operation_id, until):
                        log.warning("operation %s no longer holds cluster %s", ctx.operation_id, ctx.cluster_id)
                        return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("renewing the lease of operation %s failed", ctx.operation_id)

    async def _post_hooks(self, ctx: OperationContext, state: OperationState, error: str | None) -> None:
        try:
            cluster = await ctx.cluster()
        except OperationFailed:
            return
        urls = [*self.settings.post_operation_webhooks, *(cluster.post_operation_webhooks or [])]
        if not urls:
            return
        async with ctx.step("post_hooks") as step:
            outcomes = await call_webhooks(
                urls,
                ctx.payload("post", state=state.value, error=error, result=ctx.result),
                ctx.settings.webhook_timeout_s,
            )
            step.detail = {"calls": [o.as_dict() for o in outcomes]}
        failed = [o for o in outcomes if not o.ok]
        if failed:
            ctx.steps[-1]["state"] = "failed"
            ctx.result["post_hook_failures"] = [o.as_dict() for o in failed]
            await ctx.save()

    async def _finish(self, ctx: OperationContext, state: OperationState, error: str | None) -> None:
        await ctx.flush()  # the last step writes land before the final one
        async with session_scope(self.sessionmaker) as session:
            operation = await OperationRepository(session).get_any(ctx.operation_id)
            assert operation is not None
            operation.state = state
            operation.error = error
            operation.steps = [dict(s) for s in ctx.steps]
            operation.result = dict(ctx.result)
            operation.finished_at = _now()
            if not ctx.dry_run:
                await ClusterRepository(session).release(ctx.cluster_id, ctx.operation_id)
        self.publish(ctx.cluster_id, ctx.operation_id, ctx.type, state, ctx.steps)
