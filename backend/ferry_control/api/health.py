"""GET /api/v1/health: the service's own health (database reachable, collector running, and whether this instance
leads it or stands by). No token needed. GET /api/v1/collector/cycles: the collector's recent cycles (duration,
servers polled, failed polls) for the dashboard's collector health plot; any token."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from sqlalchemy import text

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.schemas.common import error_responses
from ferry_control.schemas.health import CollectorCycle, CollectorCycles, CollectorHealth, ServiceHealth
from ferry_control.services.collector import RECENT_CYCLES_MAX

router = APIRouter(tags=["health"])


@router.get("/health", response_model=ServiceHealth, summary="Service health")
async def get_health(request: Request, session: SessionDep) -> ServiceHealth:
    await session.execute(text("SELECT 1"))
    collector = request.app.state.collector
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
    _principal: CurrentToken,
    limit: int = Query(RECENT_CYCLES_MAX, ge=1, le=RECENT_CYCLES_MAX, description="At most this many, the newest."),
) -> CollectorCycles:
    collector = request.app.state.collector
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
