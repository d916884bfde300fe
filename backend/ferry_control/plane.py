"""The control plane without its HTTP face: drivers, the event bus and its relay between processes, the collector,
the operation runner, the failover monitor, the drill scheduler and the reconciler — built once per process and
started for its role (settings.process.role):

- `all` (the default): one process does everything, requests included (tests; a single small deployment).
- `web`: serves requests and event streams only. An operation it accepts is announced (a `pending` operation
  event, relayed) for a worker to run; collector health is read from the database.
- `worker` (`python -m ferry_control worker`): collects, runs operations, monitors for failover, schedules drills,
  reconciles, and serves no request, so a room of dashboards never delays any of it.

Processes of one deployment share the database: leases, the operation lock, the collector's cycles, and the event
relay (LISTEN/NOTIFY on PostgreSQL; the `relayed_events` table on SQLite)."""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.instance import new_instance_id
from ferry_control.core.metrics import Metrics
from ferry_control.core.secrets import SecretBox
from ferry_control.core.testhooks import TestHooks
from ferry_control.drivers.factory import DriverFactory
from ferry_control.services.collector import Collector
from ferry_control.services.drill_scheduler import DrillScheduler
from ferry_control.services.event_bus import EventBus
from ferry_control.services.event_relay import EventRelay
from ferry_control.services.event_relay_db import DatabaseEventRelay
from ferry_control.services.maintenance_expiry import MaintenanceExpiry
from ferry_control.services.orchestrator import register_executors
from ferry_control.services.orchestrator.follow_up import FollowUps
from ferry_control.services.orchestrator.monitor import FailoverMonitor
from ferry_control.services.orchestrator.pickup import OperationPickup
from ferry_control.services.orchestrator.reconcile import Reconciler
from ferry_control.services.orchestrator.recovery_hooks import UnsuccessfulRecoveries
from ferry_control.services.orchestrator.routing import ProxySync
from ferry_control.services.orchestrator.runner import OperationRunner
from ferry_control.services.replica_guard import ReplicaGuard

log = logging.getLogger(__name__)


class ControlPlane:
    def __init__(
        self,
        settings: Settings,
        sessionmaker: async_sessionmaker[AsyncSession],
        background: async_sessionmaker[AsyncSession] | None = None,
    ):
        """`sessionmaker` serves requests; `background` (default: the same) the work that must not wait for them."""
        # The fault tests' hooks: refused here, before anything starts, unless the environment is `test`.
        test_hooks = TestHooks.at_start_up(settings.process.environment)
        background = background or sessionmaker
        self.settings = settings
        self.role = settings.process.role
        self.instance_id = new_instance_id()
        self.metrics = Metrics()
        self.secrets = SecretBox.from_settings(settings)
        self.drivers = DriverFactory(settings, secrets=self.secrets)
        self.bus = EventBus(settings.streams.events_queue_max)
        self.relay: EventRelay | DatabaseEventRelay | None = None
        if not settings.database.is_sqlite:
            self.relay = EventRelay(settings.database.url, self.bus, self.instance_id, self.metrics)
        elif self.role != "all":  # SQLite: one process unless split into web and worker
            self.relay = DatabaseEventRelay(background, self.bus, self.instance_id, self.metrics)
        self.collector = Collector(background, self.drivers, self.bus, settings, self.metrics, self.instance_id)
        self.runner = OperationRunner(
            background, self.drivers, self.bus, settings, self.metrics, executes=self.role != "web",
            test_hooks=test_hooks,
        )  # fmt: skip
        register_executors(self.runner)
        self.runner.on_finish.append(FollowUps(background, self.runner, settings))
        self.runner.on_finish.append(UnsuccessfulRecoveries(background, settings))
        self.monitor = FailoverMonitor(background, self.drivers, self.runner, self.bus, settings)
        self.collector.after_cycle.append(self.monitor.check)
        # Replicas seen writable made read-only again; errant transactions found and recorded.
        self.guard = ReplicaGuard(
            background, self.drivers, self.bus, settings, self.metrics, lambda: self.collector.last_statuses
        )
        self.collector.after_cycle.append(self.guard)
        self.collector.after_cycle.append(ProxySync(background, settings, self.runner.stale_proxies))
        # Maintenance that reached its end: recorded as ended (it stopped counting at its end already).
        self.collector.after_cycle.append(MaintenanceExpiry(background, self.bus))
        self.scheduler = DrillScheduler(background, self.runner, settings, self.metrics)
        # Operations and drill runs left running by a dead instance: examined, finished or undone, marked interrupted.
        self.reconciler = Reconciler(background, self.drivers, self.bus, settings, self.runner)
        self.pickup = OperationPickup(background, self.runner, self.bus, settings)

    @property
    def works(self) -> bool:
        """Whether this process collects and runs operations (role `all` or `worker`)."""
        return self.role != "web"

    async def start(self) -> None:
        if self.relay is not None:
            self.relay.start()
        if not self.works:
            return
        await self.reconciler.run_at_start()
        self.reconciler.start()
        if self.role == "worker":
            self.pickup.start()  # operations accepted by web processes
        if self.settings.collection.enabled:
            self.collector.start()
        if self.settings.drills.scheduler_enabled:
            self.scheduler.start()
        log.info("control plane %s started as %s", self.instance_id, self.role)

    async def stop(self) -> None:
        await self.scheduler.stop()
        await self.pickup.stop()
        await self.reconciler.stop()
        await self.collector.stop()
        await self.runner.shutdown()
        if self.relay is not None:
            await self.relay.stop()  # after the operations, so their last events reach the other processes
        await self.drivers.aclose()
