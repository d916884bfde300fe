"""GET /api/v1/health: the service's own health (database reachable, collector running, and whether this instance
leads it or stands by). No token needed."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy import text

from ferry_control.api.deps import SessionDep
from ferry_control.schemas.health import CollectorHealth, ServiceHealth

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
