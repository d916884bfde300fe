"""Reconciling what a dead API instance left: at start-up (before the instance serves) and then every half lease,
in every instance.

An operation still `pending` or `running` whose cluster lock's lease has lapsed (or whose lock names another
operation) was left by an instance that died (crash, SIGKILL, lost host). The reconciler takes the cluster's lock for
it (a new fencing token, so the dead instance could not act even if it came back), examines the servers — who is
writable, who replicates from whom — against what the operation had recorded, and finishes or undoes what it had
begun:

- switchover or drill whose candidate still replicates from the old master: the candidate fenced and judged as a
  live stop is (no_return.py) — it took no write: undone (its connection running again, the old master's read-only
  flag as it was, back in service on every proxy when it is the writer again); it took writes: completed;
- once the candidate's connection to the old master is gone: completed — the candidate writable and the proxies'
  writer, every other replica and the old master replicating from it;
- failover after the promotion: completed (the other replicas follow the new master, the old master stays fenced);
  before it: the temporary leveling connections removed and the candidate's connections that ran started again;
- each by the move's one undo or completion, the live run's own (moves.py, through repairs.py);
- the one-server operations: examined and reported only (each is one move an operator may simply repeat);
- whatever the type: a parallel apply raised for a catch-up and not yet put back (`result.parallel_apply_raised`,
  catch_up_parallel.py) is put back, and the record marked `restored`.

The operation ends `interrupted` with `result.reconciled` (what was found, done, and could not be done), its typed
`result.failure` (kind `interrupted`; whether servers were left changed and how the repair settled them: undone,
rolled forward, found unchanged, or cannot tell) and a `reconcile` step; a drill's run ends `interrupted` too. Each
is alerted: an `alert` event on the bus (relayed to every instance's SSE clients), the post-operation webhooks (and a
drill's failure webhooks) with `stage: "reconciled"`, and the cluster's `alerts` in the topology and overview
responses (services/topology.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.background import BackgroundTask
from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.fencing import Acting, acting_for, scope_of
from ferry_control.models import Operation, OperationState
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.drills import DrillRepository
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.events import AlertEvent
from ferry_control.schemas.operation import PARAMS, RESULTS, DrillParams, OperationParams, OperationStep, lenient
from ferry_control.schemas.operation_results import (
    ClusterState,
    OperationResult,
    ReconcileReport,
)
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.orchestrator.catch_up_parallel import restore_unrestored
from ferry_control.services.orchestrator.failures import RepairVerdict, interrupted_failure
from ferry_control.services.orchestrator.hooks import call_webhooks
from ferry_control.services.orchestrator.kinds import repair_of
from ferry_control.services.orchestrator.raise_fences import raise_fences
from ferry_control.services.orchestrator.repairs import RepairContext
from ferry_control.services.orchestrator.runner import OperationRunner
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)

ACTIVE = (OperationState.pending, OperationState.running)
#: Bounds on the time between two looks for operations to reconcile (half the operation lease, within these).
INTERVAL_S_MIN = 0.5
INTERVAL_S_MAX = 30.0


def _now() -> datetime:
    return datetime.now(UTC)


class Reconciler:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: DriverFactory,
        bus: EventBus,
        settings: Settings,
        runner: OperationRunner,
    ):
        self._sessionmaker = sessionmaker
        self._drivers = drivers
        self._bus = bus
        self._settings = settings
        self._runner = runner
        self._background = BackgroundTask(self._run_forever, "ferry-operation-reconciler")
        #: Operations this instance reconciled (newest last), for tests and logs.
        self.reconciled: list[int] = []

    def start(self) -> None:
        self._background.start()

    async def stop(self) -> None:
        await self._background.stop()

    @property
    def interval_s(self) -> float:
        return min(max(self._settings.operations.lease_s / 2, INTERVAL_S_MIN), INTERVAL_S_MAX)

    async def run_at_start(self) -> None:
        """The start-up pass, awaited before the instance serves and starts its other background tasks (a failure
        is logged: the periodic passes try again)."""
        try:
            await self.run_once()
        except Exception:
            log.exception("reconciling interrupted operations at start-up failed")

    async def _run_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reconciling interrupted operations failed")

    async def run_once(self) -> list[int]:
        """Reconciles every operation left active by a dead instance; returns their ids."""
        async with session_scope(self._sessionmaker) as session:
            rows = await OperationRepository(session).in_states(ACTIVE)
        done = []
        mine = set(self._runner.running)
        for operation_id, dry_run, created_at in rows:
            if operation_id in mine:
                continue
            if dry_run:
                # A dry run changes nothing and takes no lock: one older than two leases has no live runner.
                if created_at < _now() - timedelta(seconds=2 * self._settings.operations.lease_s):
                    await self._end_dry_run(operation_id)
                    done.append(operation_id)
                continue
            if await self._reconcile(operation_id):
                done.append(operation_id)
        return done

    async def _end_dry_run(self, operation_id: int) -> None:
        async with session_scope(self._sessionmaker) as session:
            operation = await OperationRepository(session).get_any(operation_id)
            if operation is None or operation.state not in ACTIVE:
                return
            operation.state = OperationState.interrupted
            operation.error = "interrupted: the API instance running this dry run stopped; nothing was changed"
            operation.finished_at = _now()
            cluster_id, type_, steps = operation.cluster_id, operation.type, steps_of(operation)
        self._runner.publish(cluster_id, operation_id, type_, OperationState.interrupted, steps)

    async def _reconcile(self, operation_id: int) -> bool:
        """Takes the cluster for a dead instance's operation, repairs, records; False when it is not one."""
        now = _now()
        async with session_scope(self._sessionmaker) as session:
            operation = await OperationRepository(session).get_any(operation_id)
            if operation is None or operation.state not in ACTIVE:
                return False
            clusters = ClusterRepository(session)
            lock = await clusters.lock_for_operation(operation.cluster_id)
            if lock is None:
                return False
            holder_alive = lock.lease_expires_at is not None and lock.lease_expires_at > now
            if lock.operation_id == operation.id and holder_alive:
                return False  # its instance still renews the lease
            other_holder = lock.operation_id if lock.operation_id not in (None, operation.id) else None
            if other_holder is not None and holder_alive:
                # The cluster went to another operation meanwhile: its servers are that one's now.
                _interrupt(
                    operation,
                    f"interrupted: the API instance running it stopped; not reconciled, operation {other_holder} "
                    "holds the cluster now",
                    ReconcileReport(at=now, problems=["the cluster is held by another"]),
                    "unknown",
                )
                facts = _facts(operation)
                token = None
            else:
                lock.operation_id = operation.id
                lock.fencing_token += 1
                lock.acquired_at = now
                lock.lease_expires_at = now + timedelta(seconds=self._settings.operations.lease_s)
                token = lock.fencing_token
                facts = _facts(operation)
        if token is None:
            await self._alert(facts, None)
            return True
        renewing = asyncio.create_task(self._renew(facts.cluster_id, operation_id, token))
        started = time.perf_counter()
        verdict: RepairVerdict = "unknown"
        try:
            with acting_for(Acting(scope_of(facts.cluster_id), lambda: token)):
                report, verdict = await self._repair(facts)
        except Exception as e:
            log.exception("reconciling operation %s failed", operation_id)
            report = ReconcileReport(problems=[f"reconciling failed: {type(e).__name__}: {e}"])
        finally:
            renewing.cancel()
        report.at, report.duration_s = _now(), round(time.perf_counter() - started, 6)
        error = (
            f"interrupted: the API instance running it stopped while it was {facts.state}"
            + (f" (last step: {facts.last_step})" if facts.last_step else "")
            + "; reconciled: "
            + ("; ".join(report.done) or "nothing needed doing")
            + ("; could not: " + "; ".join(report.problems) if report.problems else "")
        )
        async with session_scope(self._sessionmaker) as session:
            operation = await OperationRepository(session).get_any(operation_id)
            assert operation is not None
            _interrupt(operation, error, report, verdict)
            if facts.result.parallel_apply_raised:
                raised = [r.model_dump(mode="json") for r in facts.result.parallel_apply_raised]
                operation.result = {**(operation.result or {}), "parallel_apply_raised": raised}
            await ClusterRepository(session).release(operation.cluster_id, operation.id, token)
            steps = steps_of(operation)
            if isinstance(facts.params, DrillParams):
                run = await DrillRepository(session).run_fresh(facts.params.drill_run_id)
                if run is not None and run.state in ("pending", "running"):
                    run.state, run.passed, run.finished_at = "interrupted", False, _now()
                    run.reasons = [*(run.reasons or []), error]
        self.reconciled.append(operation_id)
        log.warning("operation %s reconciled: %s", operation_id, error)
        self._runner.publish(facts.cluster_id, operation_id, facts.type, OperationState.interrupted, steps)
        await self._alert(facts, error)
        return True

    async def _renew(self, cluster_id: int, operation_id: int, token: int) -> None:
        while True:
            await asyncio.sleep(self._settings.operations.lease_s / 3)
            try:
                async with session_scope(self._sessionmaker) as session:
                    until = _now() + timedelta(seconds=self._settings.operations.lease_s)
                    await ClusterRepository(session).renew_lease(cluster_id, operation_id, until, token)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("renewing the lease of the reconcile of operation %s failed", operation_id)

    async def _repair(self, facts: Facts) -> tuple[ReconcileReport, RepairVerdict]:
        """What the reconcile found, did and could not do, and what it did typed."""
        async with session_scope(self._sessionmaker) as session:
            cluster = await ClusterRepository(session).get(facts.cluster_id)
            if cluster is None:
                return ReconcileReport(problems=["the cluster was deleted"]), "unknown"
            servers = list(await ServerRepository(session).list_for_cluster(cluster.id))
        snapshot = await ClusterSnapshot.take(cluster, servers, self._drivers, self._settings.collection.poll_timeout_s)
        found = describe(snapshot)
        done: list[str] = []
        problems: list[str] = await raise_fences(snapshot)
        repair = repair_of(facts.type)
        verdict: RepairVerdict = "unknown"
        if repair is not None:
            context = RepairContext(self._sessionmaker, self._settings, self._runner, facts.operation_id)
            verdict = await repair(context, snapshot, facts.result, done, problems)
        else:
            done.append(f"{facts.type} is one move: examined only, repeat it if it is still wanted")
        restored, not_restored = await restore_unrestored(snapshot, facts.result)
        done.extend(restored)
        problems.extend(not_restored)
        after = await ClusterSnapshot.take(cluster, servers, self._drivers, self._settings.collection.poll_timeout_s)
        return ReconcileReport(found=found, done=done, problems=problems, after=describe(after)), verdict

    async def _alert(self, facts: Facts, error: str | None) -> None:
        data = AlertEvent(
            kind="operation_interrupted", operation_id=facts.operation_id, type=facts.type,
            message=error or "interrupted and not reconciled",
        )  # fmt: skip
        self._bus.publish(ClusterEvent.of(facts.cluster_id, data))
        async with session_scope(self._sessionmaker) as session:
            cluster = await ClusterRepository(session).get(facts.cluster_id)
            hooks = [] if cluster is None else list(cluster.post_operation_webhooks or [])
        urls = [*self._settings.webhooks.post_operation, *hooks]
        if facts.type == "drill":
            urls += self._settings.webhooks.drill_failure
            if isinstance(facts.params, DrillParams) and facts.params.webhook_url:
                urls.append(facts.params.webhook_url)
        if not urls:
            return
        payload = {
            "stage": "reconciled", "event": "operation_interrupted", "operation_id": facts.operation_id,
            "cluster_id": facts.cluster_id, "type": facts.type, "params": facts.stored_params,
            "requester": facts.requester, "state": OperationState.interrupted.value, "error": error,
        }  # fmt: skip
        outcomes = await call_webhooks(urls, payload, self._settings)
        for outcome in outcomes:
            if not outcome.ok:
                log.warning("alert webhook %s failed: %s", outcome.url, outcome.error)


@dataclass(frozen=True)
class Facts:
    """What the reconcile needs of the operation, detached from the session: its parameters and its result (with
    the plan its moves recorded before they began) as its type's models."""

    operation_id: int
    cluster_id: int
    type: str
    params: OperationParams | None
    #: The parameters as the row keeps them (for the webhooks' payload).
    stored_params: dict[str, Any]
    result: OperationResult
    requester: str
    state: str
    last_step: str | None


def _facts(operation: Operation) -> Facts:
    steps = steps_of(operation)
    params_model = PARAMS.get(operation.type)
    return Facts(
        operation_id=operation.id, cluster_id=operation.cluster_id, type=operation.type,
        params=None if params_model is None else lenient(params_model, operation.params or {}),
        stored_params=dict(operation.params or {}),
        result=lenient(RESULTS.get(operation.type, OperationResult), operation.result or {}),
        requester=operation.requester, state=operation.state.value,
        last_step=f"{steps[-1].name} {steps[-1].state}" if steps else None,
    )  # fmt: skip


def _interrupt(operation: Operation, error: str, report: ReconcileReport, verdict: RepairVerdict) -> None:
    """Records the end of an operation whose API instance stopped: `interrupted`, the reconcile's report, and its
    typed failure from what the repair did (`verdict`) and could not do."""
    operation.state = OperationState.interrupted
    operation.error = error
    failure = interrupted_failure(verdict, report.problems)
    operation.result = {
        **(operation.result or {}),
        "reconciled": report.model_dump(mode="json"),
        "failure": failure.model_dump(mode="json"),
    }
    steps = steps_of(operation)
    for step in steps:
        if step.state == "running":  # cut short by the crash: how long it ran is not known
            step.end("failed", "interrupted: the API instance running it stopped", None)
    detail = {"done": report.done, "problems": report.problems}
    reconciled = OperationStep.instant(
        "reconcile", "failed" if report.problems else "passed", detail, report.duration_s
    )
    operation.steps = [s.stored() for s in [*steps, reconciled]]
    operation.finished_at = reconciled.started_at


def steps_of(operation: Operation) -> list[OperationStep]:
    """The operation's steps as its row keeps them."""
    return [OperationStep.model_validate(s) for s in operation.steps or []]


def describe(snapshot: ClusterSnapshot) -> ClusterState:
    """Per server: reachable, read-only, and each connection's master (by label when registered) and state."""
    servers: dict[str, dict[str, object]] = {}
    for view in snapshot.views:
        if view.status is None:
            servers[view.info.label] = {"reachable": False, "error": view.error}
            continue
        connections = []
        for c in view.status.connections:
            master = snapshot.master_of(c)
            connections.append(
                {"name": c.name, "master": master.info.label if master else c.master_address, "running": c.running,
                 "io_state": c.io_state.value, "last_error": c.last_error.code if c.last_error else None}
            )  # fmt: skip
        servers[view.info.label] = {"reachable": True, "read_only": view.status.read_only, "connections": connections}
    writable_roots = [
        view.info.label for view in snapshot.views
        if view.status is not None and not view.status.read_only and not view.status.connections
    ]  # fmt: skip
    return ClusterState.model_validate({"servers": servers, "writable_without_master": writable_roots})
