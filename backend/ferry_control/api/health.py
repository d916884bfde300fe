"""GET /api/v1/health: the service's own health (database reachable, collector running, and whether this instance
leads it or stands by). No token needed. GET /api/v1/collector/cycles: the collector's recent cycles (duration,
servers polled, failed polls) for the dashboard's collector health plot; any token.

A process that runs its own collector answers from it; a web process (its collector runs in a worker) answers from
the database: the collector's lease and the cycles every collector stores."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Query, Request
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.models import COLLECTOR_LEASE
from ferry_control.repositories.coordination import CycleRepository
from ferry_control.repositories.leases import LeaseRepository
from ferry_control.schemas.common import error_responses
from ferry_control.schemas.health import CollectorCycle, CollectorCycles, CollectorHealth, ServiceHealth
from ferry_control.services.collector import RECENT_CYCLES_MAX

router = APIRouter(tags=["health"])


@router.get("/health", response_model=ServiceHealth, summary="Service health")
async def get_health(request: Request, session: SessionDep) -> ServiceHealth:
    await session.execute(text("SELECT 1"))
    collector = request.app.state.collector
    if not collector.running:
        return ServiceHealth(status="ok", database="ok", collector=await _collector_elsewhere(request, session))
    return ServiceHealth(
        status="ok",
        database="ok",
        collector=CollectorHealth(
            enabled=request.app.state.settings.collector_enabled,
            running=collector.running,
            last_cycle_at=collector.last_cycle_at,
            last_cycle_s=collector.last_cycle_s,
            role=collector.role,
            instance_id=collector.lease.instance_id,
            leader_instance_id=collector.lease.holder,
            clusters_collected=None if collector.share is None else len(collector.share.held),
        ),
    )


@router.get(
    "/collector/cycles",
    response_model=CollectorCycles,
    summary="The collector's recent cycles",
    responses=error_responses(401, 422),
)
async def get_collector_cycles(
    request: Request,
    session: SessionDep,
    _principal: CurrentToken,
    limit: int = Query(RECENT_CYCLES_MAX, ge=1, le=RECENT_CYCLES_MAX, description="At most this many, the newest."),
) -> CollectorCycles:
    collector = request.app.state.collector
    if not collector.running:
        rows = await CycleRepository(session).newest(limit)
        holder = await _lease_holder(session)
        instance = rows[-1].instance_id if rows else collector.lease.instance_id
        return CollectorCycles(
            instance_id=instance,
            role="leader" if rows and instance == holder else None,
            poll_interval_s=request.app.state.settings.poll_interval_s,
            cycles=[
                CollectorCycle(finished_at=c.finished_at, duration_s=c.duration_s, polled=c.polled, failed=c.failed)
                for c in rows
            ],
        )
    recent = list(collector.recent_cycles)[-limit:]
    return CollectorCycles(
        instance_id=collector.lease.instance_id,
        role=collector.role,
        poll_interval_s=request.app.state.settings.poll_interval_s,
        cycles=[
            CollectorCycle(finished_at=c.finished_at, duration_s=c.duration_s, polled=c.polled, failed=c.failed)
            for c in recent
        ],
    )


async def _lease_holder(session: AsyncSession) -> str | None:
    """The instance holding the collector's lease now (None: free or lapsed)."""
    lease = await LeaseRepository(session).get(COLLECTOR_LEASE)
    if lease is None or lease.expires_at is None or lease.expires_at <= datetime.now(UTC):
        return None
    return lease.holder


async def _collector_elsewhere(request: Request, session: AsyncSession) -> CollectorHealth:
    """The collector of another process (a worker), as the database shows it."""
    holder = await _lease_holder(session)
    newest = await CycleRepository(session).newest(1)
    return CollectorHealth(
        enabled=request.app.state.settings.collector_enabled,
        running=holder is not None,
        last_cycle_at=newest[0].finished_at if newest else None,
        last_cycle_s=newest[0].duration_s if newest else None,
        role=None,
        instance_id=request.app.state.instance_id,
        leader_instance_id=holder,
    )
