"""The service's own health, its collector's recent cycles and the servers behind their failed polls, as `GET
/health`, `GET /collector/cycles` and `GET /collector/failed-polls` show them. A process that runs its own
collector answers from it; a web process (its collector runs in a worker) answers from the database: the
collector's lease and the cycles every collector stores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.models import COLLECTOR_LEASE
from ferry_control.repositories.coordination import CycleRepository
from ferry_control.repositories.database import DatabaseRepository
from ferry_control.repositories.leases import LeaseRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.health import (
    CollectorCycle,
    CollectorCycles,
    CollectorFailedPolls,
    CollectorHealth,
    FailedPollServer,
    ServiceHealth,
)
from ferry_control.services.collector import Collector, CycleStat, FailedPoll


class HealthService:
    def __init__(self, session: AsyncSession, collector: Collector, settings: Settings, instance_id: str):
        self.session = session
        self.collector = collector
        self.settings = settings
        self.instance_id = instance_id

    async def health(self) -> ServiceHealth:
        """The database answered (else this raises), and the collector's state."""
        await DatabaseRepository(self.session).ping()
        collector = self.collector
        if not collector.running:
            return ServiceHealth(status="ok", database="ok", collector=await self._collector_elsewhere())
        return ServiceHealth(
            status="ok",
            database="ok",
            collector=CollectorHealth(
                enabled=self.settings.collection.enabled,
                running=collector.running,
                last_cycle_at=collector.last_cycle_at,
                last_cycle_s=collector.last_cycle_s,
                role=collector.role,
                instance_id=collector.lease.instance_id,
                leader_instance_id=collector.lease.holder,
                clusters_collected=None if collector.share is None else len(collector.share.held),
            ),
        )

    async def cycles(self, limit: int) -> CollectorCycles:
        """The collector's newest `limit` cycles, oldest first."""
        instance, role, stats = await self._newest(limit)
        return CollectorCycles(
            instance_id=instance,
            role=role,
            poll_interval_s=self.settings.collection.poll_interval_s,
            cycles=[
                CollectorCycle(finished_at=c.finished_at, duration_s=c.duration_s, polled=c.polled, failed=c.failed)
                for c in stats
            ],
        )

    async def failed_polls(self, limit: int) -> CollectorFailedPolls:
        """The servers behind the failed polls of the newest `limit` cycles, each with its count and last error."""
        _, _, stats = await self._newest(limit)
        by_server: dict[int, list[tuple[datetime, FailedPoll]]] = {}
        for stat in stats:
            for failure in stat.failures:
                by_server.setdefault(failure.registered_server_id, []).append((stat.finished_at, failure))
        servers = await ServerRepository(self.session).by_ids_with_cluster(by_server)
        rows = []
        for registered_id, failures in by_server.items():
            server = servers.get(registered_id)
            newest = failures[-1][1]
            rows.append(
                FailedPollServer(
                    cluster_id=newest.cluster_id,
                    cluster=server.cluster.name if server is not None else None,
                    registered_server_id=registered_id,
                    server_id=server.reported_server_id if server is not None else None,
                    server=server.label
                    if server is not None
                    else f"a server removed since (registered id {registered_id})",
                    failed=len(failures),
                    first_failed_at=failures[0][0],
                    last_failed_at=failures[-1][0],
                    last_error=newest.error,
                )
            )
        rows.sort(key=lambda r: (-r.failed, r.server))
        failed = sum(stat.failed for stat in stats)
        return CollectorFailedPolls(
            cycles=len(stats),
            since=stats[0].finished_at if stats else None,
            failed=failed,
            unnamed=failed - sum(r.failed for r in rows),
            servers=rows,
        )

    async def _newest(self, limit: int) -> tuple[str, Literal["leader", "standby"] | None, list[CycleStat]]:
        """The instance whose cycles these are, its role, and its newest `limit` cycles, oldest first: this
        process's own collector's, else (a web process) those the collectors stored."""
        collector = self.collector
        if collector.running:
            return collector.lease.instance_id, collector.role, list(collector.recent_cycles)[-limit:]
        rows = await CycleRepository(self.session).newest(limit)
        holder = await self._lease_holder()
        instance = rows[-1].instance_id if rows else collector.lease.instance_id
        stats = [
            CycleStat(
                r.finished_at, r.duration_s, r.polled, r.failed,
                tuple(FailedPoll(int(f["cluster_id"]), int(f["registered_server_id"]), str(f["error"]))
                      for f in r.failures or ()),
            )
            for r in rows
        ]  # fmt: skip
        return instance, "leader" if rows and instance == holder else None, stats

    async def _lease_holder(self) -> str | None:
        """The instance holding the collector's lease now (None: free or lapsed)."""
        lease = await LeaseRepository(self.session).get(COLLECTOR_LEASE)
        if lease is None or lease.expires_at is None or lease.expires_at <= datetime.now(UTC):
            return None
        return lease.holder

    async def _collector_elsewhere(self) -> CollectorHealth:
        """The collector of another process (a worker), as the database shows it."""
        holder = await self._lease_holder()
        newest = await CycleRepository(self.session).newest(1)
        return CollectorHealth(
            enabled=self.settings.collection.enabled,
            running=holder is not None,
            last_cycle_at=newest[0].finished_at if newest else None,
            last_cycle_s=newest[0].duration_s if newest else None,
            role=None,
            instance_id=self.instance_id,
            leader_instance_id=holder,
        )
