"""The collector: polls every server of every cluster, stores what changed, and publishes it.

One cycle:
1. reads the work list (every server with an admin address) in a short transaction;
2. polls them all through their drivers, at most `poll_concurrency_max` at once, each bounded by `poll_timeout_s`;
3. in one transaction, records per server: reachability and health (unreachable after
   `unreachable_after_failures` failed polls in a row), positions, change-only position samples per domain,
   replication links (from the replica's own connections, and — for replicas whose admin address is unknown — from
   the master's list of streaming replicas), lag per replica per domain and change-only lag samples;
4. after the commit, publishes the changes on the event bus (SSE).

Lag in transactions is the seq_no difference between the master's gtid_binlog_pos (this cycle's poll, else the last
stored) and the replica's gtid_current_pos; lag in seconds is what the replica reports. `run_forever` repeats the
cycle every `poll_interval_s`, then the `after_cycle` hooks (the failover monitor), and runs the retention job
every `retention_interval_s`.

Leadership: with several API instances on one database, one at a time collects. Before each cycle `run_forever`
takes or renews the `collector` lease (`collector_lease_s`); only the holder polls, runs the hooks and retention,
and it renews the lease again in the transaction that records the cycle, so a leader that lost the lease during a
long cycle records nothing. A standby tries again every poll interval and takes over once the lease lapsed; a
leader that stops cleanly gives the lease back, so a standby takes over at its next attempt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import ferry_engine
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.background import BackgroundTask
from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.instance import new_instance_id
from ferry_control.core.metrics import Metrics
from ferry_control.core.outbound import check_host
from ferry_control.drivers.base import ReplicaConnection, ServerStatus
from ferry_control.drivers.credentials import ServerCredentials
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import (
    COLLECTOR_LEASE,
    HealthEvent,
    HealthState,
    LagSample,
    LinkSource,
    PositionSample,
    ReplicationLink,
    Server,
    ServerKind,
)
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.samples import SampleRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.leases import Lease
from ferry_control.services.retention import RetentionReport, apply_retention

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PollTarget:
    server_id: int
    cluster_id: int
    kind: ServerKind
    admin_address: str
    #: The credentials of the server's own cluster (decrypted), or why they could not be opened.
    credentials: ServerCredentials | None
    credentials_error: str | None = None


@dataclass(frozen=True)
class PollOutcome:
    target: PollTarget
    status: ServerStatus | None
    error: str | None
    at: datetime


class LeaseLost(Exception):
    """Another instance took the collector's lease while this one was in a cycle: the cycle records nothing."""


@dataclass
class CycleReport:
    polled: int = 0
    failed: int = 0
    duration_s: float = 0.0
    events: list[ClusterEvent] = field(default_factory=list)


def parse_position(text: str | None) -> ferry_engine.GtidPosition:
    return ferry_engine.GtidPosition.parse(text or "")


def split_address(address: str) -> tuple[str, int] | None:
    """`host:port` → (host, port); None when it is not one (a valid host name or IP literal, a port in range)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None
    try:
        return check_host(host), int(port)
    except ValueError:
        return None


def lag_against_master(
    replica_position: ferry_engine.GtidPosition,
    master_binlog: ferry_engine.GtidPosition | None,
    connection: ReplicaConnection,
) -> dict[str, dict[str, Any]]:
    """Per domain: transactions behind the master's binlog position (the node's own figure when the master is
    not a polled server), and the node's lag in seconds."""
    lag: dict[str, dict[str, Any]] = {}
    if master_binlog is not None:
        behind = master_binlog.difference(replica_position)
        for domain in master_binlog.domains():
            reported = connection.lag.get(domain)
            lag[str(domain)] = {
                "transactions": int(behind.get(domain, 0)),
                "seconds": float(reported.seconds) if reported else 0.0,
            }
    else:
        for domain, reported in connection.lag.items():
            lag[str(domain)] = {"transactions": reported.transactions, "seconds": float(reported.seconds)}
    return lag


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
        self._background = BackgroundTask(self.run_forever, "ferry-collector")
        self._cycle_lock = asyncio.Lock()
        self.last_cycle_at: datetime | None = None
        self.last_cycle_s: float | None = None
        #: Cycles completed since start (tests wait on it rather than on time).
        self.cycles = 0
        self.last_retention: RetentionReport | None = None
        #: Run after every cycle of `run_forever` (the failover monitor); their failures are logged, not raised.
        self.after_cycle: list[Callable[[], Awaitable[object]]] = []
        #: Which instance collects, with several on one database.
        self.lease = Lease(sessionmaker, COLLECTOR_LEASE, instance_id or new_instance_id(), settings.collector_lease_s)
        #: Whether this instance led at its last attempt (None: not tried since it started).
        self._leading: bool | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._background.running

    @property
    def role(self) -> str | None:
        """`leader` (this instance collects) or `standby` while running; None when stopped."""
        if not self.running:
            return None
        return "leader" if self._leading else "standby"

    def start(self) -> None:
        self._background.start()

    async def stop(self) -> None:
        """Stops the loop; a leader gives its lease back, so a standby takes over at once."""
        started = self.running
        await self._background.stop()
        if started:
            try:
                if await self.lease.release():
                    log.info("instance %s gave the collector's lease back", self.lease.instance_id)
            except Exception:
                log.warning("could not give the collector's lease back (another instance takes over when it "
                            "lapses, in %s s)", self._settings.collector_lease_s, exc_info=True)  # fmt: skip
        self._leading = None
        self._metrics.collector_leader.set(0)

    async def run_forever(self) -> None:
        next_retention = time.monotonic()
        while True:
            started = time.monotonic()
            try:
                if await self._lead():
                    await self.run_cycle(as_leader=True)
                    for hook in self.after_cycle:
                        try:
                            await hook()
                        except asyncio.CancelledError:
                            raise
                        except Exception:
                            log.exception("a hook after the collector cycle failed")
                    if time.monotonic() >= next_retention:
                        await self.run_retention()
                        next_retention = time.monotonic() + self._settings.retention_interval_s
            except asyncio.CancelledError:
                raise
            except LeaseLost:
                self._note_leading(False)
            except Exception:
                log.exception("collector cycle failed")
            elapsed = time.monotonic() - started
            await asyncio.sleep(max(self._settings.poll_interval_s - elapsed, 0.0))

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
            log.info("instance %s leads the collector (lease of %s s)", instance, self._settings.collector_lease_s)
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

    async def run_cycle(self, *, as_leader: bool = False) -> CycleReport:
        """Polls every server once and stores the result; safe to call directly (tests, run-now). `as_leader`:
        the results are recorded only if this instance still holds the lease (else LeaseLost)."""
        async with self._cycle_lock:
            started = time.perf_counter()
            targets = await self._targets()
            outcomes = await self._poll_all(targets)
            report = CycleReport(polled=len(outcomes), failed=sum(1 for o in outcomes if o.status is None))
            if outcomes:
                async with session_scope(self._sessionmaker) as session:
                    if as_leader and not await self.lease.renew_in(session):
                        raise LeaseLost()
                    report.events = await self._record(session, outcomes)
            for event in report.events:
                self._bus.publish(event)
            report.duration_s = time.perf_counter() - started
            self._metrics.collector_cycle_seconds.observe(report.duration_s)
            self.last_cycle_at = datetime.now(UTC)
            self.last_cycle_s = report.duration_s
            self.cycles += 1
            return report

    async def _targets(self) -> list[PollTarget]:
        async with session_scope(self._sessionmaker) as session:
            servers = await ServerRepository(session).list_all_with_cluster()
            credentials: dict[int, tuple[ServerCredentials | None, str | None]] = {}
            for s in servers:
                if s.cluster_id not in credentials:
                    try:
                        credentials[s.cluster_id] = (self._drivers.credentials_for(s.cluster), None)
                    except DriverError as e:
                        credentials[s.cluster_id] = (None, str(e))
            return [
                PollTarget(s.id, s.cluster_id, s.kind, s.admin_address, *credentials[s.cluster_id])
                for s in servers
                if s.admin_address is not None
            ]

    async def _poll_all(self, targets: Sequence[PollTarget]) -> list[PollOutcome]:
        semaphore = asyncio.Semaphore(self._settings.poll_concurrency_max)

        async def poll(target: PollTarget) -> PollOutcome:
            async with semaphore:
                try:
                    if target.credentials_error is not None:
                        raise DriverError(target.admin_address, "secrets_unavailable", target.credentials_error)
                    driver = self._drivers.for_address(target.kind, target.admin_address, target.credentials)
                    status = await asyncio.wait_for(driver.status(), self._settings.poll_timeout_s)
                    self._metrics.collector_polls.labels("ok").inc()
                    return PollOutcome(target, status, None, datetime.now(UTC))
                except (DriverError, TimeoutError) as e:
                    error = (
                        str(e) if isinstance(e, DriverError) else f"no answer within {self._settings.poll_timeout_s} s"
                    )
                    self._metrics.collector_polls.labels("error").inc()
                    return PollOutcome(target, None, error, datetime.now(UTC))

        return list(await asyncio.gather(*(poll(t) for t in targets)))

    async def _record(self, session: AsyncSession, outcomes: Sequence[PollOutcome]) -> list[ClusterEvent]:
        servers_repo = ServerRepository(session)
        links_repo = LinkRepository(session)
        samples = SampleRepository(session)
        events: list[ClusterEvent] = []
        by_cluster: dict[int, list[PollOutcome]] = {}
        for outcome in outcomes:
            by_cluster.setdefault(outcome.target.cluster_id, []).append(outcome)

        for cluster_id, cluster_outcomes in by_cluster.items():
            servers = {s.id: s for s in await servers_repo.list_for_cluster(cluster_id)}
            polled = {o.target.server_id: o for o in cluster_outcomes if o.target.server_id in servers}
            for server_id, outcome in polled.items():
                events += self._record_server(servers[server_id], outcome, servers_repo, samples)
            await servers_repo.flush()
            links = list(await links_repo.list_for_cluster(cluster_id))
            events += await self._record_links(cluster_id, servers, polled, links, links_repo, samples)
        return events

    def _record_server(
        self, server: Server, outcome: PollOutcome, repo: ServerRepository, samples: SampleRepository
    ) -> list[ClusterEvent]:
        events: list[ClusterEvent] = []
        cluster_id = server.cluster_id
        previous_health = server.health
        status = outcome.status
        if status is None:
            server.consecutive_failures += 1
            server.last_error = outcome.error
            if server.consecutive_failures >= self._settings.unreachable_after_failures:
                server.health = HealthState.unreachable
        else:
            server.consecutive_failures = 0
            server.last_error = status.failure
            server.last_seen_at = outcome.at
            server.health = HealthState.failing if status.failure else HealthState.healthy
            server.reported_server_id = status.server_id
            if server.read_only is not None and server.read_only != status.read_only:
                events.append(
                    ClusterEvent(cluster_id, "read_only", {"server_id": server.id, "read_only": status.read_only})
                )
            server.read_only = status.read_only
            old = parse_position(server.gtid_current_pos)
            new = parse_position(status.positions.current)
            for gtid in new:
                if old.get(gtid.domain) != gtid:
                    samples.add_position(
                        PositionSample(
                            server_id=server.id,
                            domain_id=gtid.domain,
                            gtid=f"{gtid.domain}-{gtid.server}-{gtid.seq}",
                            seq_no=gtid.seq,
                            sampled_at=outcome.at,
                        )
                    )
                    events.append(
                        ClusterEvent(
                            cluster_id,
                            "position",
                            {
                                "server_id": server.id,
                                "domain": gtid.domain,
                                "gtid": f"{gtid.domain}-{gtid.server}-{gtid.seq}",
                                "seq_no": gtid.seq,
                            },
                        )
                    )
            server.gtid_binlog_pos = status.positions.binlog
            server.gtid_slave_pos = status.positions.slave
            server.gtid_current_pos = str(new)
        if server.health != previous_health:
            repo.add_health_event(
                HealthEvent(server_id=server.id, state=server.health, detail=server.last_error, at=outcome.at)
            )
            events.append(
                ClusterEvent(
                    cluster_id,
                    "health",
                    {
                        "server_id": server.id,
                        "state": server.health.value,
                        "previous": previous_health.value,
                        "detail": server.last_error,
                    },
                )
            )
        return events

    async def _record_links(
        self,
        cluster_id: int,
        servers: dict[int, Server],
        polled: dict[int, PollOutcome],
        links: list[ReplicationLink],
        repo: LinkRepository,
        samples: SampleRepository,
    ) -> list[ClusterEvent]:
        events: list[ClusterEvent] = []
        by_protocol_address = {(s.host, s.protocol_port): s for s in servers.values() if s.protocol_port is not None}
        by_reported_id = {s.reported_server_id: s for s in servers.values() if s.reported_server_id is not None}

        # Links as each polled replica reports them.
        for server_id, outcome in polled.items():
            if outcome.status is None:
                continue
            replica = servers[server_id]
            replica_position = parse_position(replica.gtid_current_pos)
            existing = {
                link.name: link
                for link in links
                if link.replica_server_id == server_id and link.source == LinkSource.replica
            }
            for connection in outcome.status.connections:
                address = split_address(connection.master_address)
                master = by_protocol_address.get(address) if address else None
                master_binlog = (
                    parse_position(master.gtid_binlog_pos) if master and master.gtid_binlog_pos is not None else None
                )
                lag = lag_against_master(replica_position, master_binlog, connection)
                link = existing.pop(connection.name, None)
                if link is None:
                    link = await repo.add(
                        ReplicationLink(
                            cluster_id=cluster_id,
                            replica_server_id=server_id,
                            name=connection.name,
                            source=LinkSource.replica,
                            lag={},
                        )
                    )
                    links.append(link)
                events += self._update_link(link, connection, master, lag, outcome.at, samples)
            for gone in existing.values():
                links.remove(gone)
                await repo.delete(gone)
                events.append(
                    ClusterEvent(cluster_id, "link", {"link_id": gone.id, "replica_server_id": server_id,
                                                      "connection": gone.name, "removed": True})
                )  # fmt: skip

        # Streams a polled master reports, for replicas the collector cannot poll itself.
        for server_id, outcome in polled.items():
            if outcome.status is None:
                continue
            existing = {
                link.replica_server_id: link
                for link in links
                if link.master_server_id == server_id and link.source == LinkSource.master
            }
            for streaming in outcome.status.replicas:
                replica = by_reported_id.get(streaming.server_id)
                if replica is None or replica.admin_port is not None:
                    continue
                link = existing.pop(replica.id, None)
                if link is None:
                    master = servers[server_id]
                    link = await repo.add(
                        ReplicationLink(
                            cluster_id=cluster_id,
                            replica_server_id=replica.id,
                            name=None,
                            source=LinkSource.master,
                            master_server_id=server_id,
                            master_address=master.protocol_address,
                            running=True,
                            lag={},
                        )
                    )
                    links.append(link)
                    events.append(
                        ClusterEvent(cluster_id, "link", {"link_id": link.id, "replica_server_id": replica.id,
                                                          "master_server_id": server_id, "connection": None})
                    )  # fmt: skip
            for gone in existing.values():
                links.remove(gone)
                await repo.delete(gone)
        return events

    def _update_link(
        self,
        link: ReplicationLink,
        connection: ReplicaConnection,
        master: Server | None,
        lag: dict[str, dict[str, Any]],
        at: datetime,
        samples: SampleRepository,
    ) -> list[ClusterEvent]:
        error = connection.last_error
        before = (link.master_server_id, link.running, link.io_state, link.sql_state, link.last_error_code)
        link.master_address = connection.master_address
        link.master_server_id = master.id if master else None
        link.running = connection.running
        link.io_state = connection.io_state.value
        link.sql_state = connection.sql_state.value
        link.received_position = connection.received_position
        link.applied_position = connection.applied_position
        link.last_error_side = error.side if error else None
        link.last_error_code = error.code if error else None
        link.last_error_message = error.message if error else None
        previous_lag = link.lag or {}
        for domain, value in lag.items():
            if previous_lag.get(domain) != value:
                samples.add_lag(
                    LagSample(
                        link_id=link.id,
                        domain_id=int(domain),
                        transactions=value["transactions"],
                        seconds=value["seconds"],
                        sampled_at=at,
                    )
                )
        lag_changed = previous_lag != lag
        link.lag = lag
        after = (link.master_server_id, link.running, link.io_state, link.sql_state, link.last_error_code)
        if before == after and not lag_changed:
            return []
        return [
            ClusterEvent(
                link.cluster_id,
                "link",
                {
                    "link_id": link.id,
                    "replica_server_id": link.replica_server_id,
                    "master_server_id": link.master_server_id,
                    "connection": link.name,
                    "running": link.running,
                    "io_state": link.io_state,
                    "sql_state": link.sql_state,
                    "lag": lag,
                    "last_error_code": link.last_error_code,
                },
            )
        ]
