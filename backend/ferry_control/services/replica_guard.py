"""The replica guard, run after every collector cycle (so by the instance that collects the cluster), on what that
cycle's polls answered:

- **errant transactions**: for each server that replicates, its own transactions that none of its masters has, per
  domain (services/errant.py), stored with when each domain was first seen (`replica_guard.errant`), and an `errant`
  event when they change; judged only when the server and every master it replicates from answered this cycle
  (else what was stored stands);
- **read-only enforcement**: a server that has a replication connection and answered writable is a replica that can
  take a client's write — a second history. Unless an admin made it writable for its own domains
  (`replica_guard.writable_domains`), it is made read-only at once through its driver (`set_read_only`), with an
  audit row (`read_only_enforced`, no actor: the control plane), a `replica_guard` event and the
  `read_only_enforcement_webhooks`. It is only flagged (an event and the webhooks, once until it is read-only
  again; the topology's `writable_replica` alert says it for as long as it lasts) when its cluster's
  `enforce_read_only_replicas` is off, or when the server is in maintenance (its operator owns it then).

Nothing is enforced or flagged in a cluster while an operation holds it (a switchover or failover sets read-only
itself). The guard re-reads the server just before acting (it must still replicate and be writable) and the
operation lock just after: if an operation took the cluster meanwhile and the server no longer replicates (it was
promoted), the flag is given back (`withdrawn`). Fenced servers are the failover monitor's (monitor.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.metrics import Metrics
from ferry_control.drivers.base import ServerStatus
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import Cluster, LinkSource, ReplicationLink, Server
from ferry_control.models import ReplicaGuard as GuardRow
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.replica_guard import ReplicaGuardRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.events import ErrantEvent, ReplicaGuardEvent
from ferry_control.services.audit import AuditService
from ferry_control.services.errant import find_errant, with_since
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.orchestrator.recovery_hooks import send_in_background

log = logging.getLogger(__name__)


@dataclass
class GuardReport:
    """What one pass did (tests and logs read it)."""

    enforced: list[int] = field(default_factory=list)
    flagged: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    errant_changed: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Replica:
    server: Server
    status: ServerStatus
    masters: list[Server]


class ReplicaGuard:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: DriverFactory,
        bus: EventBus,
        settings: Settings,
        metrics: Metrics,
        statuses: Callable[[], Mapping[int, ServerStatus]],
    ):
        self._sessionmaker = sessionmaker
        self._drivers = drivers
        self._bus = bus
        self._settings = settings
        self._metrics = metrics
        #: What the last collector cycle's polls answered, by registered server id.
        self._statuses = statuses
        #: Servers flagged writable (event and webhooks sent), until seen read-only again.
        self._flagged: set[int] = set()

    async def __call__(self, clusters: set[int] | None = None) -> GuardReport:
        return await self.check(clusters)

    async def check(self, only: set[int] | None = None) -> GuardReport:
        """One pass over every cluster (of `only`, when given: those this instance collects)."""
        report = GuardReport()
        statuses = dict(self._statuses())
        async with session_scope(self._sessionmaker) as session:
            clusters = [c for c in await ClusterRepository(session).list() if only is None or c.id in only]
            ids = [c.id for c in clusters]
            servers_of = await ServerRepository(session).list_for_clusters(ids)
            links_of = await LinkRepository(session).list_for_clusters(ids)
            rows = await ReplicaGuardRepository(session).for_clusters(ids)
            busy = {c.id: await self._busy(session, c.id) for c in clusters}
            work = [(c, servers_of[c.id], links_of[c.id]) for c in clusters]
        for cluster, servers, links in work:
            replicas = self._replicas(servers, links, statuses)
            await self._errant(cluster, servers, replicas, rows, statuses, report)
            if busy[cluster.id]:
                continue
            for replica in replicas.values():
                await self._guard(cluster, replica, rows.get(replica.server.id), report)
        return report

    @staticmethod
    async def _busy(session: AsyncSession, cluster_id: int) -> bool:
        lock = await ClusterRepository(session).lock_state(cluster_id)
        return lock is not None and lock.operation_id is not None

    @staticmethod
    def _replicas(
        servers: list[Server], links: list[ReplicationLink], statuses: Mapping[int, ServerStatus]
    ) -> dict[int, _Replica]:
        """The servers that answered this cycle with at least one replication connection, with their masters."""
        by_id = {s.id: s for s in servers}
        masters: dict[int, list[Server]] = {}
        for link in links:
            if link.source == LinkSource.replica and link.master_server_id in by_id:
                masters.setdefault(link.replica_server_id, []).append(by_id[link.master_server_id])
        found = {}
        for server in servers:
            status = statuses.get(server.id)
            if status is not None and status.connections:
                found[server.id] = _Replica(server, status, masters.get(server.id, []))
        return found

    # -- errant transactions ---------------------------------------------------------------------------------

    async def _errant(
        self,
        cluster: Cluster,
        servers: list[Server],
        replicas: dict[int, _Replica],
        rows: dict[int, GuardRow],
        statuses: Mapping[int, ServerStatus],
        report: GuardReport,
    ) -> None:
        now = datetime.now(UTC)
        changes: dict[int, list[dict[str, Any]]] = {}
        for server in servers:
            row = rows.get(server.id)
            before = list(row.errant) if row is not None else []
            replica = replicas.get(server.id)
            if replica is None:
                if statuses.get(server.id) is not None and before:
                    changes[server.id] = []  # answered, and replicates from nobody now: nothing to judge against
                continue
            master_statuses = [statuses.get(m.id) for m in replica.masters]
            if not replica.masters or any(s is None for s in master_statuses):
                continue  # a master unknown or silent this cycle: what was stored stands
            found = find_errant(
                own_server_id=replica.status.server_id,
                binlog_state=replica.status.positions.binlog_state,
                slave_pos=replica.status.positions.slave,
                master_states=[s.positions.binlog_state for s in master_statuses if s is not None],
                writable_domains=[int(d) for d in (row.writable_domains if row is not None else [])],
            )
            stored = with_since(found, before, now)
            if _without_since(stored) != _without_since(before):
                changes[server.id] = stored
        if not changes:
            return
        async with session_scope(self._sessionmaker) as session:
            if not await ClusterRepository(session).hold([cluster.id]):
                return  # deleted since the cycle read it (its rows with it)
            repository = ReplicaGuardRepository(session)
            for server_id, stored in changes.items():
                row = await repository.get_or_add(cluster.id, server_id)
                row.errant = stored
                rows[server_id] = row
        for server_id, stored in changes.items():
            report.errant_changed.append(server_id)
            self._bus.publish(ClusterEvent.of(cluster.id, ErrantEvent(registered_server_id=server_id, domains=stored)))
            if stored:
                log.warning("cluster %s: server %s holds errant transactions: %s", cluster.name, server_id, stored)

    # -- read-only enforcement -------------------------------------------------------------------------------

    async def _guard(self, cluster: Cluster, replica: _Replica, row: GuardRow | None, report: GuardReport) -> None:
        server = replica.server
        if replica.status.read_only:
            self._flagged.discard(server.id)
            return
        if server.fenced or server.admin_address is None or (row is not None and row.writable_domains):
            return
        masters = ", ".join(m.label for m in replica.masters) or "its master"
        if server.maintenance or not cluster.enforce_read_only_replicas:
            reason = (
                "it is in maintenance: left as it is"
                if server.maintenance
                else "enforce_read_only_replicas is off for its cluster"
            )
            if server.id not in self._flagged:
                self._flagged.add(server.id)
                detail = f"{server.label} replicates {masters} and is writable ({reason})"
                log.warning("cluster %s: %s", cluster.name, detail)
                self._publish(cluster, server, "flagged", detail)
                self._webhooks("writable_replica", cluster, server, detail)
            report.flagged.append(server.id)
            return
        await self._enforce(cluster, replica, masters, report)

    async def _enforce(self, cluster: Cluster, replica: _Replica, masters: str, report: GuardReport) -> None:
        server = replica.server
        driver = self._drivers.for_server(server, cluster)
        try:
            async with session_scope(self._sessionmaker) as session:
                lock = await ClusterRepository(session).lock_state(cluster.id)
                token = lock.fencing_token if lock is not None else None
                if lock is not None and lock.operation_id is not None:
                    return
            now = await driver.status()
            if not now.connections or now.read_only:
                return  # promoted, or made read-only, since the poll
            await driver.set_read_only(True)
        except DriverError as e:
            detail = f"{server.label} replicates {masters} and is writable; making it read-only failed: {e}"
            log.warning("cluster %s: %s", cluster.name, detail)
            report.failed.append(server.id)
            self._metrics.read_only_enforcements.labels("failed").inc()
            await self._audit(cluster, server, "read_only_enforcement_failed", detail, 502)
            self._publish(cluster, server, "failed", detail)
            self._webhooks("read_only_enforcement_failed", cluster, server, detail)
            return
        at = datetime.now(UTC)
        if await self._withdrawn(cluster, server, driver, token):
            return
        detail = f"{server.label} replicates {masters} and was writable: made read-only"
        log.warning("cluster %s: %s", cluster.name, detail)
        report.enforced.append(server.id)
        self._flagged.discard(server.id)
        self._metrics.read_only_enforcements.labels("enforced").inc()
        async with session_scope(self._sessionmaker) as session:
            await ReplicaGuardRepository(session).record_read_only(cluster.id, server.id, at)
        await self._audit(cluster, server, "read_only_enforced", detail, 200)
        self._publish(cluster, server, "enforced", detail)
        self._webhooks("read_only_enforced", cluster, server, detail)

    async def _withdrawn(self, cluster: Cluster, server: Server, driver: Any, token: int | None) -> bool:
        """An operation that took the cluster while the flag was being set, and promoted the server meanwhile,
        gets the server back writable; True when so."""
        async with session_scope(self._sessionmaker) as session:
            lock = await ClusterRepository(session).lock_state(cluster.id)
        taken = lock is not None and (lock.operation_id is not None or lock.fencing_token != token)
        if not taken:
            return False
        try:
            if (await driver.status()).connections:
                return False  # still a replica: the operation sets read-only as it needs
            await driver.set_read_only(False)
        except DriverError as e:
            log.warning("cluster %s: an operation took the cluster while %s was made read-only, and it could not "
                        "be checked or given back: %s", cluster.name, server.label, e)  # fmt: skip
            return False
        detail = f"{server.label} was promoted by an operation while the guard made it read-only: made writable again"
        log.warning("cluster %s: %s", cluster.name, detail)
        self._publish(cluster, server, "withdrawn", detail)
        return True

    async def _audit(self, cluster: Cluster, server: Server, action: str, detail: str, status: int) -> None:
        try:
            async with session_scope(self._sessionmaker) as session:
                await AuditService(session).record(
                    actor=None, token_id=None, action=action, method="-",
                    path=f"/api/v1/clusters/{cluster.id}/servers/{server.id}", cluster_id=cluster.id,
                    server_id=server.id, status_code=status, details={"read_only": True, "detail": detail},
                )  # fmt: skip
        except Exception:
            log.exception("could not record the audit row %s of %s", action, server.label)

    def _publish(self, cluster: Cluster, server: Server, action: str, detail: str) -> None:
        data = ReplicaGuardEvent(registered_server_id=server.id, action=action, detail=detail)  # type: ignore[arg-type]
        self._bus.publish(ClusterEvent.of(cluster.id, data))

    def _webhooks(self, stage: str, cluster: Cluster, server: Server, detail: str) -> None:
        send_in_background(self._settings.webhooks.read_only_enforcement, {
            "stage": stage, "cluster_id": cluster.id, "cluster": cluster.name, "registered_server_id": server.id,
            "server": server.label, "detail": detail, "at": datetime.now(UTC).isoformat(),
        }, self._settings)  # fmt: skip


def _without_since(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in f.items() if k != "since"} for f in findings]
