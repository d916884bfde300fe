"""GET /api/v1/health: the service's own health (database reachable, collector running, and whether this instance
leads it or stands by). No token needed. GET /api/v1/collector/cycles: the collector's recent cycles (duration,
servers polled, failed polls) for the dashboard's collector health plot; GET /api/v1/collector/failed-polls: the
servers behind those failed polls, each with its count and last error; any token. All from `services/health.py`."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.schemas.common import error_responses
from ferry_control.schemas.health import CollectorCycles, CollectorFailedPolls, ServiceHealth
from ferry_control.services.collector import RECENT_CYCLES_MAX
from ferry_control.services.health import HealthService

router = APIRouter(tags=["health"])


def _service(request: Request, session: AsyncSession) -> HealthService:
    state = request.app.state
    return HealthService(session, state.collector, state.settings, state.instance_id)


@router.get("/health", response_model=ServiceHealth, summary="Service health")
async def get_health(request: Request, session: SessionDep) -> ServiceHealth:
    return await _service(request, session).health()


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
    return await _service(request, session).cycles(limit)


@router.get(
    "/collector/failed-polls",
    response_model=CollectorFailedPolls,
    summary="The servers behind the collector's failed polls",
    responses=error_responses(401, 422),
)
async def get_collector_failed_polls(
    request: Request,
    session: SessionDep,
    _principal: CurrentToken,
    limit: int = Query(RECENT_CYCLES_MAX, ge=1, le=RECENT_CYCLES_MAX, description="Over this many newest cycles."),
) -> CollectorFailedPolls:
    """Each server the collector could not read in the newest `limit` cycles (those GET /collector/cycles shows),
    with how often, when first and last, and the last error."""
    return await _service(request, session).failed_polls(limit)
