"""The service's own health and its collector's recent cycles, as `GET /health` and `GET /collector/cycles` show
them. A process that runs its own collector answers from it; a web process (its collector runs in a worker) answers
from the database: the collector's lease and the cycles every collector stores."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.models import COLLECTOR_LEASE
from ferry_control.repositories.coordination import CycleRepository
from ferry_control.repositories.database import DatabaseRepository
from ferry_control.repositories.leases import LeaseRepository
from ferry_control.schemas.health import CollectorCycle, CollectorCycles, CollectorHealth, ServiceHealth
from ferry_control.services.collector import Collector


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
                enabled=self.settings.collector_enabled,
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
        collector = self.collector
        if not collector.running:
            rows = await CycleRepository(self.session).newest(limit)
            holder = await self._lease_holder()
            instance = rows[-1].instance_id if rows else collector.lease.instance_id
            return CollectorCycles(
                instance_id=instance,
                role="leader" if rows and instance == holder else None,
                poll_interval_s=self.settings.poll_interval_s,
                cycles=[
                    CollectorCycle(finished_at=c.finished_at, duration_s=c.duration_s, polled=c.polled, failed=c.failed)
                    for c in rows
                ],
            )
        recent = list(collector.recent_cycles)[-limit:]
        return CollectorCycles(
            instance_id=collector.lease.instance_id,
            role=collector.role,
            poll_interval_s=self.settings.poll_interval_s,
            cycles=[
                CollectorCycle(finished_at=c.finished_at, duration_s=c.duration_s, polled=c.polled, failed=c.failed)
                for c in recent
            ],
        )

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
            enabled=self.settings.collector_enabled,
            running=holder is not None,
            last_cycle_at=newest[0].finished_at if newest else None,
            last_cycle_s=newest[0].duration_s if newest else None,
            role=None,
            instance_id=self.instance_id,
            leader_instance_id=holder,
        )
