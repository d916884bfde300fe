"""The operation's side of the simulation without a database: a runner stand-in (settings, drivers, metrics, the
proxies that missed a move) and `SimContext`, the real `OperationContext` — its steps, its guard and compensations
(`guarded`, `_compensate`, `undo_with`, `hold_records`) run as in production — with only what touches the database
replaced: the record is kept in memory (`stored`: what a reconcile would read, written at each change outside the
window as the runner's writer task does), and the cluster and its servers come from the simulation. The fencing is
the real one — `check_fence` before every step, the compensation's `_claim` and `_keep_claim`, and the runner's
heartbeat (`start_heartbeat`) — over the in-memory lock of database.py, so an instance that wakes up after a
reconcile took its cluster over (faults.py) meets exactly what production has.

A step's start is also a place where the API may crash (faults.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ferry_control.core.config import Settings
from ferry_control.core.metrics import Metrics
from ferry_control.core.testhooks import TestHooks
from ferry_control.models import PromotionRule, ServerKind
from ferry_control.services.orchestrator.routing import StaleProxies
from ferry_control.services.orchestrator.runner import OperationContext, OperationRunner, StepHandle
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot
from tests.simulation.clock import now
from tests.simulation.faults import FaultPlan, Instance


def _no_database() -> Any:
    """The sessionmaker of a simulated instance: routing.py's background recording of read-only flags finds none
    (it logs and goes on, as when the database is briefly away)."""
    raise RuntimeError("no database in the simulation")


class SimRunner:
    """What an `OperationContext` and routing.py ask of their `OperationRunner`."""

    def __init__(self, settings: Settings, drivers: Any, metrics: Metrics) -> None:
        self.settings = settings
        self.drivers = drivers
        self.metrics = metrics
        self.test_hooks = TestHooks.model_construct()
        self.sessionmaker: Any = _no_database
        self.stale_proxies = StaleProxies()
        self.running: list[int] = []

    def publish(self, *args: Any) -> None:
        """Events go nowhere: nobody watches a simulated operation."""


def registered(cluster_id: int, servers: Any) -> tuple[SimpleNamespace, list[SimpleNamespace]]:
    """The cluster and its servers as the database would give them (what `ClusterSnapshot.take` and `ctx.cluster()`
    read), for the simulated servers."""
    cluster = SimpleNamespace(
        id=cluster_id, name="sim", candidate_labels=[], credentials_ciphertext=None, max_window_s=None,
        catch_up_parallel_workers=0, pre_operation_webhooks=[], post_operation_webhooks=[],
    )  # fmt: skip
    rows = [
        SimpleNamespace(
            id=s.id,
            cluster_id=cluster_id,
            name=s.name,
            kind=ServerKind.ferry,
            host=s.host,
            protocol_port=3306,
            admin_port=8080,
            admin_address=s.admin_address,
            maintenance=False,
            fenced=False,
            fence_reason=None,
            approved=True,
            gtid_binlog_pos=None,
            last_seen_at=None,
            replicas_may_be_ahead=None,
            master_role=None,
            reported_server_id=s.server_id,
            promotion_rule=PromotionRule.neutral,
            labels={},
        )  # fmt: skip
        for s in servers
    ]
    return cluster, rows


@dataclass
class SimContext(OperationContext[Any, Any]):
    instance: Instance | None = None
    faults: FaultPlan | None = None
    registered: tuple[Any, list[Any]] | None = None
    #: The result as the operation's row holds it (what a reconcile reads after a crash).
    stored: dict[str, Any] = field(default_factory=dict)
    #: Called when the guard begins a compensation (the operation stopped), before it moves anything.
    on_stop: Callable[[], None] | None = None
    #: An exception other than a failure the executor ended with (the runner says "internal error").
    internal_error: str | None = None

    @asynccontextmanager
    async def step(self, name: str, detail: Any = None, *, fenced: bool = True) -> AsyncIterator[StepHandle]:
        assert self.instance is not None and self.faults is not None
        if self.instance.crashed.is_set():
            await self.instance.frozen()
        if self.faults.at_step(self.instance, name, now()):
            self.instance.crash(f"at the start of step {name}")
            await self.instance.frozen()
        async with super().step(name, detail, fenced=fenced) as handle:
            yield handle

    async def _claim(self) -> str | None:
        if self.on_stop is not None:
            self.on_stop()
        return await super()._claim()

    def start_heartbeat(self, work: asyncio.Task[Any]) -> asyncio.Task[None]:
        """The runner's own lease renewal (`OperationRunner._heartbeat`) for the operation's work: it stops it once
        a renewal finds the lock taken over."""
        self._work = work
        return asyncio.create_task(OperationRunner._heartbeat(self.runner, self))  # type: ignore[arg-type]

    def changed(self) -> None:
        if self._held:
            return
        self.stored = self.result.stored()

    async def flush(self) -> None:
        """Kept at each change already."""

    async def snapshot(self) -> ClusterSnapshot:
        assert self.registered is not None
        cluster, servers = self.registered
        return await ClusterSnapshot.take(cluster, servers, self.drivers, self.settings.collection.poll_timeout_s)

    async def cluster(self) -> Any:
        assert self.registered is not None
        return self.registered[0]
