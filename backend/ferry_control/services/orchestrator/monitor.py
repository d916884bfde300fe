"""The failover monitor, run after every collector cycle (so by the instance that runs the collector):

- **fencing**: a fenced server (a master replaced by a failover) that answers and is writable is made read-only at
  once;
- **rejoin**: in a cluster with `auto_rejoin` on, a fenced server that answers starts a rejoin operation (it becomes
  a replica of the new master only when it has nothing the new master lacks; a refusal is retried no sooner than
  `rejoin_retry_s` later, as is a start refused because another operation holds the cluster);
- **detection**: in a cluster with automatic failover on (and not suspended by an earlier failover, nor within the
  cool-down after one), each master (a cluster may have several, each the origin of its domains) and each
  intermediate master whose last
  `failover_detection_polls` polls failed is checked live with its replicas; only when they confirm losing it
  too (and none still replicates from it) is a failover started — a
  control-plane-only blip is logged and published as `failover_not_confirmed`, never acted on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.errors import Conflict
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import Cluster, HealthState, LinkSource, Server
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.events import FailoverNotConfirmedEvent, FencedEvent
from ferry_control.schemas.operation import FailoverParams, RejoinParams
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.operations import OperationService
from ferry_control.services.orchestrator import recovery_hooks
from ferry_control.services.orchestrator.failover import confirm_master_lost, probe_master
from ferry_control.services.orchestrator.rebuild_mark import is_rebuild_mark
from ferry_control.services.orchestrator.runner import OperationRunner
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)
#: The requester recorded on operations the monitor starts.
REQUESTER = "failover-monitor"


class FailoverMonitor:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: DriverFactory,
        runner: OperationRunner,
        bus: EventBus,
        settings: Settings,
    ):
        self._sessionmaker = sessionmaker
        self._drivers = drivers
        self._runner = runner
        self._bus = bus
        self._settings = settings
        #: Per cluster, when an unconfirmed loss was last logged.
        self._not_confirmed_logged: dict[int, float] = {}
        #: Per server, when a rejoin was last started for it (monotonic clock).
        self._rejoin_started: dict[int, float] = {}

    async def check(self, only: set[int] | None = None) -> list[int]:
        """One pass over every cluster (of `only`, when given: those this instance collects); returns the ids of
        the failover operations it started."""
        async with session_scope(self._sessionmaker) as session:
            clusters = [c for c in await ClusterRepository(session).list() if only is None or c.id in only]
            ids = [cluster.id for cluster in clusters]
            servers_of = await ServerRepository(session).list_for_clusters(ids)
            links_of = await LinkRepository(session).list_for_clusters(ids)
            work = [(cluster, servers_of[cluster.id], links_of[cluster.id]) for cluster in clusters]
        started = []
        for cluster, servers, links in work:
            await self._fence(cluster, servers)
            await self._rejoin(cluster, servers)
            master = self._lost_master(cluster, servers, links)
            if master is not None:
                operation_id = await self._consider_failover(cluster, servers, master)
                if operation_id is not None:
                    started.append(operation_id)
        return started

    async def _fence(self, cluster: Cluster, servers: list[Server]) -> None:
        for server in servers:
            if not server.fenced or server.health != HealthState.healthy or server.read_only is not False:
                continue
            if server.admin_address is None:
                continue
            try:
                await self._drivers.for_server(server, cluster).set_read_only(True)
            except DriverError as e:
                log.warning("could not fence %s: %s", server.name, e)
                continue
            log.warning("fenced %s is back: made read-only", server.label)
            fenced = FencedEvent(registered_server_id=server.id, read_only=True, reason=server.fence_reason)
            self._bus.publish(ClusterEvent.of(cluster.id, fenced))

    async def _rejoin(self, cluster: Cluster, servers: list[Server]) -> None:
        if not cluster.auto_rejoin:
            return
        now = time.monotonic()
        for server in servers:
            if not server.fenced or server.health != HealthState.healthy or server.maintenance:
                continue
            if is_rebuild_mark(server.fence_reason):
                continue  # marked by a rebuild that did not complete: its data is not to be trusted
            if now - self._rejoin_started.get(server.id, float("-inf")) < self._settings.operations.rejoin_retry_s:
                continue
            # Asked live: the record may still say healthy for a server that just died (its failed polls not yet
            # counted), and a rejoin started then would fail and wait out the retry for nothing.
            try:
                async with asyncio.timeout(self._settings.collection.poll_timeout_s):
                    await self._drivers.for_server(server, cluster).status()
            except (DriverError, TimeoutError):
                continue
            self._rejoin_started[server.id] = now
            try:
                async with session_scope(self._sessionmaker) as session:
                    operation, _ = await OperationService(session).start(
                        self._runner, self._settings, cluster_id=cluster.id, type_="rejoin",
                        params=RejoinParams(registered_server_id=server.id), dry_run=False, requester=REQUESTER,
                    )  # fmt: skip
            except Conflict as e:
                log.info(
                    "cluster %s: %s answers again, but its rejoin waits: %s", cluster.name, server.label, e.message
                )
                continue
            log.warning("cluster %s: fenced %s answers again; rejoin operation %s started",
                        cluster.name, server.label, operation.id)  # fmt: skip

    def _lost_master(self, cluster: Cluster, servers: list[Server], links: list) -> Server | None:  # type: ignore[type-arg]
        if not cluster.auto_failover or cluster.failover_suspended_at is not None:
            return None
        if cluster.last_failover_at is not None and datetime.now(UTC) - cluster.last_failover_at < timedelta(
            seconds=self._settings.failover.cooldown_s
        ):
            return None
        replica_links = [link for link in links if link.source == LinkSource.replica and link.master_server_id]
        replicating = {link.replica_server_id for link in replica_links}
        sources = {link.master_server_id for link in replica_links}
        # Every source is watched — each master (the two-master shape has two) and each intermediate master; one lost
        # at a time is failed over, naming it, a master before an intermediate one (whose loss may follow from it).
        lost = [
            s for s in servers
            if s.id in sources and not s.maintenance and not s.fenced
            and s.consecutive_failures >= self._settings.failover.detection_polls
        ]  # fmt: skip
        roots = [s for s in lost if s.id not in replicating]
        if roots:
            return roots[0] if len(roots) == 1 else None
        return lost[0] if len(lost) == 1 else None

    async def _consider_failover(self, cluster: Cluster, servers: list[Server], master: Server) -> int | None:
        snapshot = await ClusterSnapshot.take(cluster, servers, self._drivers, self._settings.collection.poll_timeout_s)
        await probe_master(snapshot, self._settings, master.id)
        loss = confirm_master_lost(snapshot, need_witness=True, source_id=master.id)
        if not loss.confirmed or loss.master is None or loss.master.info.id != master.id:
            now = time.monotonic()
            if now - self._not_confirmed_logged.get(cluster.id, 0.0) >= self._settings.failover.not_confirmed_log_s:
                self._not_confirmed_logged[cluster.id] = now
                log.warning("cluster %s: master %s missed polls, but failover is not confirmed: %s",
                            cluster.name, master.name, loss.detail)  # fmt: skip
            self._bus.publish(
                ClusterEvent.of(
                    cluster.id, FailoverNotConfirmedEvent(registered_server_id=master.id, detail=loss.detail)
                )
            )
            return None
        recovery_hooks.detected(self._settings, cluster.id, cluster.name, master.id, master.name, loss.detail)
        try:
            async with session_scope(self._sessionmaker) as session:
                operation, _ = await OperationService(session).start(
                    self._runner,
                    self._settings,
                    cluster_id=cluster.id,
                    type_="failover",
                    params=FailoverParams(
                        automatic=True, candidate_registered_server_id=None, source_registered_server_id=master.id
                    ),
                    dry_run=False,
                    requester=REQUESTER,
                )
                operation_id = operation.id
        except Conflict as e:
            log.warning("cluster %s: master lost, but %s", cluster.name, e.message)
            recovery_hooks.not_recovered(self._settings, cluster.id, master.id, f"failover not started: {e.message}")
            return None
        log.warning("cluster %s: source %s lost (%s); failover operation %s started",
                    cluster.name, master.name, loss.detail, operation_id)  # fmt: skip
        return operation_id
