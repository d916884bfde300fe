"""GET /clusters/{id}/events: the cluster's changes as server-sent events (position, health, link, read_only).

The stream opens with a `subscribed` event, so a client knows from when on it will see changes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Path
from sse_starlette import EventSourceResponse, ServerSentEvent

from ferry_control.api.deps import BusDep, CurrentToken, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.services.clusters import ClusterService
from ferry_control.services.event_bus import EventBus

router = APIRouter(tags=["events"], responses=error_responses(401, 404, 422))


async def _stream(bus: EventBus, cluster_id: int) -> AsyncIterator[ServerSentEvent]:
    async with bus.subscribe(cluster_id) as subscription:
        yield ServerSentEvent(event="subscribed", data=json.dumps({"cluster_id": cluster_id}))
        while True:
            event = await subscription.next()
            payload = {"cluster_id": event.cluster_id, "at": event.at.isoformat(), **event.data}
            yield ServerSentEvent(event=event.type, data=json.dumps(payload))


@router.get(
    "/clusters/{cluster_id}/events",
    summary="Cluster changes as server-sent events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "An endless event stream."}},
)
async def cluster_events(
    session: SessionDep,
    bus: BusDep,
    settings: SettingsDep,
    _: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
) -> EventSourceResponse:
    await ClusterService(session).get(cluster_id)
    return EventSourceResponse(_stream(bus, cluster_id), ping=settings.events_ping_s)
