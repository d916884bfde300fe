"""The collector's loop: every `poll_interval_s`, one cycle — the work list and one poll of every server
(`collection.polling`: each answer checked, a bad one recorded as that server's error only), then, in one
transaction, the record of every cluster (`collection.recording`: health, the last successful observation,
position samples, links and lag per domain, each cluster in a savepoint of its own), then the events published
on the bus (SSE) after the commit — then the `after_cycle` hooks (the failover monitor), which run after every
cycle of a leader even when the cycle itself failed (the replica guard among them, judging from `last_statuses`), and
the retention job every `retention_interval_s`.

Leadership: with several API instances on one database, one at a time collects. Before each cycle `run_forever`
takes or renews the `collector` lease (`collector_lease_s`); only the holder polls, runs the hooks and retention,
and it renews the lease again in the transaction that records the cycle, so a leader that lost the lease during a
long cycle records nothing. A standby tries again every poll interval and takes over once the lease lapsed; a
leader that stops cleanly gives the lease back, so a standby takes over at its next attempt.

Shared collection (PostgreSQL, `collector_share_clusters`, the default there): every instance collects, each its
share of the clusters (`collection.share`: one advisory lock per cluster, freed the moment its instance dies), and
runs the failover monitor for those clusters only; the lease above then only picks the instance that runs the
retention job (the `leader` of /health). Each cluster is polled by exactly one live instance.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.background import BackgroundTask
from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.instance import new_instance_id
from ferry_control.core.metrics import Metrics
from ferry_control.drivers.base import ServerStatus
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import COLLECTOR_LEASE, CollectorCycleRow
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.coordination import CycleRepository
from ferry_control.repositories.samples import SampleRepository
from ferry_control.services.collection.polling import Poller
from ferry_control.services.collection.recording import Recorder
from ferry_control.services.collection.share import ClusterShare
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.leases import Lease
from ferry_control.services.retention import RetentionReport, apply_retention

log = logging.getLogger(__name__)

#: Cycles kept for `recent_cycles` (the dashboard's collector health plot): 15 minutes at the default 1 s interval.
RECENT_CYCLES_MAX = 900


class LeaseLost(Exception):
    """Another instance took the collector's lease while this one was in a cycle: the cycle records nothing."""


@dataclass
class CycleReport:
    polled: int = 0
    failed: int = 0
    duration_s: float = 0.0
    events: list[ClusterEvent] = field(default_factory=list)


#: Failed polls a stored cycle names (the count is exact beyond it); an error's text is cut to ERROR_TEXT_MAX.
FAILURES_KEPT_MAX = 100
ERROR_TEXT_MAX = 500


@dataclass(frozen=True)
class FailedPoll:
    """A server the cycle could not read, and why."""

    cluster_id: int
    registered_server_id: int
    error: str

    def stored(self) -> dict[str, object]:
        return {"cluster_id": self.cluster_id, "registered_server_id": self.registered_server_id, "error": self.error}


@dataclass(frozen=True)
class CycleStat:
    """One finished cycle as the collector health plot shows it."""

    finished_at: datetime
    duration_s: float
    polled: int
    failed: int
    failures: tuple[FailedPoll, ...] = ()


class Collector:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: DriverFactory,
        bus: EventBus,
        settings: Settings,
        metrics: Metrics,
        instance_id: str | None = None,
    ):
        self._sessionmaker = sessionmaker
        self._drivers = drivers
        self._bus = bus
        self._settings = settings
        self._metrics = metrics
        self._poller = Poller(drivers, settings, metrics)
        self._recorder = Recorder(settings)
        self._background = BackgroundTask(self.run_forever, "ferry-collector")
        self._cycle_lock = asyncio.Lock()
        self.last_cycle_at: datetime | None = None
        self.last_cycle_s: float | None = None
        #: Cycles completed since start (tests wait on it rather than on time).
        self.cycles = 0
        #: The newest cycles of this instance, oldest first (bounded: RECENT_CYCLES_MAX).
        self.recent_cycles: deque[CycleStat] = deque(maxlen=RECENT_CYCLES_MAX)
        self.last_retention: RetentionReport | None = None
        #: What the last cycle's polls answered, by registered server id (the servers that answered; the replica
        #: guard, an after-cycle hook, judges from it).
        self.last_statuses: dict[int, ServerStatus] = {}
        #: Run after every cycle of `run_forever` (the failover monitor) with the clusters this instance collects
        #: (None: every cluster); their failures are logged, not raised.
        self.after_cycle: list[Callable[[set[int] | None], Awaitable[object]]] = []
        #: Which instance collects, with several on one database.
        self.lease = Lease(sessionmaker, COLLECTOR_LEASE, instance_id or new_instance_id(), settings.collection.lease_s)
        #: The clusters this instance collects, shared with the other instances (None: one collects them all).
        self.share: ClusterShare | None = None
        if settings.collection.share_clusters and not settings.database.is_sqlite:
            self.share = ClusterShare(settings.database.url, self.lease.instance_id)
        #: Whether this instance led at its last attempt (None: not tried since it started).
        self._leading: bool | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._background.running

    @property
    def role(self) -> Literal["leader", "standby"] | None:
        """`leader` (this instance collects) or `standby` while running; None when stopped."""
        if not self.running:
            return None
        return "leader" if self._leading else "standby"

    def start(self) -> None:
        self._background.start()

    async def stop(self) -> None:
        """Stops the loop; a leader gives its lease back, so a standby takes over at once (and with shared
        collection every cluster this instance held is freed)."""
        started = self.running
        await self._background.stop()
        if self.share is not None:
            await self.share.close()
        if started:
            try:
                if await self.lease.release():
                    log.info("instance %s gave the collector's lease back", self.lease.instance_id)
            except Exception:
                log.warning("could not give the collector's lease back (another instance takes over when it "
                            "lapses, in %s s)", self._settings.collection.lease_s, exc_info=True)  # fmt: skip
        self._leading = None
        self._metrics.collector_leader.set(0)

    async def run_forever(self) -> None:
        next_retention = time.monotonic()
        while True:
            started = time.monotonic()
            if self.share is not None:
                next_retention = await self._shared_cycle(next_retention)
                await asyncio.sleep(max(self._settings.collection.poll_interval_s - (time.monotonic() - started), 0.0))
                continue
            try:
                if await self._lead():
                    try:
                        await self.run_cycle(as_leader=True)
                    except LeaseLost:
                        raise
                    except Exception:
                        # The hooks still run: the failover monitor and fencing read what is stored, and a cycle
                        # that could not record must not also stop them.
                        log.exception("collector cycle failed")
                    await self._run_hooks()
                    if time.monotonic() >= next_retention:
                        await self.run_retention()
                        next_retention = time.monotonic() + self._settings.collection.retention_interval_s
            except asyncio.CancelledError:
                raise
            except LeaseLost:
                self._note_leading(False)
            except Exception:
                log.exception("collector cycle failed")
            elapsed = time.monotonic() - started
            await asyncio.sleep(max(self._settings.collection.poll_interval_s - elapsed, 0.0))

    async def _shared_cycle(self, next_retention: float) -> float:
        """One cycle of shared collection: this instance's clusters polled and watched; retention by the lease's
        holder. Returns when retention is next due."""
        assert self.share is not None
        try:
            leading = await self._lead()
            async with session_scope(self._sessionmaker) as session:
                clusters = list(await ClusterRepository(session).ids())
            mine = await self.share.assign(clusters)
            if mine or not clusters:  # no cluster at all: an empty cycle still shows the collector alive
                try:
                    await self.run_cycle(as_leader=True, clusters=mine)
                except LeaseLost:
                    log.warning("instance %s lost its clusters' locks during a cycle: nothing recorded",
                                self.lease.instance_id)  # fmt: skip
                    return next_retention
                except Exception:
                    log.exception("collector cycle failed")
                await self._run_hooks(mine)
            if leading and time.monotonic() >= next_retention:
                await self.run_retention()
                next_retention = time.monotonic() + self._settings.collection.retention_interval_s
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("collector cycle failed")
        return next_retention

    async def _run_hooks(self, clusters: set[int] | None = None) -> None:
        """Every after-cycle hook, each on its own: one that fails is logged and the next still runs."""
        for hook in self.after_cycle:
            try:
                await hook(clusters)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("a hook after the collector cycle failed")

    async def _lead(self) -> bool:
        """Takes or renews the lease; True when this instance is to collect now."""
        try:
            leading = await self.lease.acquire()
        except Exception as e:
            log.warning("could not take or renew the collector's lease (%s): no cycle now", e)
            self._leading = False
            self._metrics.collector_leader.set(0)
            return False
        self._note_leading(leading)
        return leading

    def _note_leading(self, leading: bool) -> None:
        instance = self.lease.instance_id
        if leading and not self._leading:
            log.info("instance %s leads the collector (lease of %s s)", instance, self._settings.collection.lease_s)
        elif not leading and self._leading:
            log.warning("instance %s lost the collector's lease to %s: standby", instance, self.lease.holder)
        elif not leading and self._leading is None:
            log.info("instance %s is a standby collector (the lease is held by %s)", instance, self.lease.holder)
        self._leading = leading
        self._metrics.collector_leader.set(1 if leading else 0)

    async def run_retention(self, now: datetime | None = None) -> RetentionReport:
        async with session_scope(self._sessionmaker) as session:
            report = await apply_retention(SampleRepository(session), self._settings, now or datetime.now(UTC))
        for table, rows in report.deleted_by_table().items():
            self._metrics.retention_rows_deleted.labels(table).inc(rows)
        self.last_retention = report
        return report

    # -- one cycle -------------------------------------------------------------------------------------------

    async def run_cycle(self, *, as_leader: bool = False, clusters: set[int] | None = None) -> CycleReport:
        """Polls every server (of `clusters`, when given) once and stores the result; safe to call directly (tests,
        run-now). `as_leader`: the results are recorded only if this instance still holds the lease, or — a cycle of
        shared collection, given its `clusters` — their locks (else LeaseLost)."""
        async with self._cycle_lock:
            started = time.perf_counter()
            async with session_scope(self._sessionmaker) as session:
                targets = await self._poller.targets(session)
            if clusters is not None:
                targets = [t for t in targets if t.cluster_id in clusters]
            outcomes = await self._poller.poll_all(targets)
            self.last_statuses = {o.target.server_id: o.status for o in outcomes if o.status is not None}
            report = CycleReport(polled=len(outcomes), failed=sum(1 for o in outcomes if o.status is None))
            failures = tuple(
                FailedPoll(o.target.cluster_id, o.target.server_id, (o.error or "no answer")[:ERROR_TEXT_MAX])
                for o in outcomes
                if o.status is None
            )[:FAILURES_KEPT_MAX]
            if outcomes:
                shared = clusters is not None and self.share is not None
                if as_leader and shared and not await self.share.alive():  # type: ignore[union-attr]
                    raise LeaseLost()
                async with session_scope(self._sessionmaker) as session:
                    if as_leader and not shared and not await self.lease.renew_in(session):
                        raise LeaseLost()
                    report.events = await self._recorder.record(session, outcomes)
            for event in report.events:
                self._bus.publish(event)
            report.duration_s = time.perf_counter() - started
            self._metrics.collector_cycle_seconds.observe(report.duration_s)
            self.last_cycle_at = datetime.now(UTC)
            self.last_cycle_s = report.duration_s
            self.recent_cycles.append(
                CycleStat(self.last_cycle_at, report.duration_s, report.polled, report.failed, failures)
            )
            await self._store_cycle(self.recent_cycles[-1])
            self.cycles += 1
            return report

    async def _store_cycle(self, stat: CycleStat) -> None:
        """The cycle for every process's collector health plot (a web process runs no collector); a failure to
        store it is logged, never the cycle's."""
        row = CollectorCycleRow(
            instance_id=self.lease.instance_id, finished_at=stat.finished_at, duration_s=stat.duration_s,
            polled=stat.polled, failed=stat.failed, failures=[f.stored() for f in stat.failures],
        )  # fmt: skip
        try:
            async with session_scope(self._sessionmaker) as session:
                await CycleRepository(session).add(row, RECENT_CYCLES_MAX)
        except Exception:
            log.warning("could not store the collector cycle of %s", stat.finished_at, exc_info=True)
