"""GET /clusters/{id}/events: the cluster's changes as server-sent events (see EVENTS_DESCRIPTION).

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

EVENTS_DESCRIPTION = """The cluster's changes as they happen, one server-sent event each (its name is the type;
its data a JSON object with `cluster_id`, `at` and the fields below). The stream opens with `subscribed`.

- `position` — a server's GTID position changed (`server_id`, positions per domain)
- `health`, `read_only`, `fenced`, `server_discovered` — a server's state changed (`server_id`, …)
- `link` — a replication connection appeared, changed state or lag, or went away (`link_id`, `replica_server_id`, …)
- `operation` — an operation's state or one of its steps changed (`operation_id`, `type`, `state`, `steps`)
- `drill` — a drill run changed state (`drill_run_id`, `operation_id`, `state`: running, passed, failed)
- `failover_not_confirmed` — the master looked lost to the control plane only (`server_id`, `detail`)

The browser's EventSource cannot send the bearer token: read it with fetch and a streaming body."""


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
    description=EVENTS_DESCRIPTION,
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
