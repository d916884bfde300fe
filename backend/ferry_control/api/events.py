"""GET /clusters/{id}/events: the cluster's changes as server-sent events (see EVENTS_DESCRIPTION).

The stream opens with a `subscribed` event, so a client knows from when on it will see changes. The caller's token
is checked again every poll interval while the stream runs — for all of the process's streams in one read
(`services/streams.py`): once it is revoked or expired, the stream sends `token_invalid` and ends. A token may hold
`events_streams_per_token_max` streams, an instance serve `events_streams_max` (429 `too_many_streams` beyond)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import APIRouter, Path, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from ferry_control.api.deps import BusDep, CurrentToken, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.events import ClusterEventData, SubscribedEvent, TokenInvalidEvent
from ferry_control.services.clusters import ClusterService
from ferry_control.services.event_bus import EventBus
from ferry_control.services.streams import StreamRegistry

#: The errors are JSON (ErrorBody), unlike the stream: named by reference so they are not put under its media type.
ERRORS = {
    status: {
        "description": entry["description"],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for status, entry in error_responses(401, 404, 422).items()
}
router = APIRouter(tags=["events"], responses=ERRORS)


class EventStreamResponse(EventSourceResponse):
    """An event stream whose media type the OpenAPI schema knows (the stream's data schema goes under it)."""

    media_type = "text/event-stream"


EVENTS_DESCRIPTION = """The cluster's changes as they happen, one server-sent event each (its name is the type;
its data a JSON object with `event` — the type again —, `cluster_id`, `at` and the type's fields: the schema
`ClusterEventData`, discriminated by `event`). The stream opens with `subscribed`.

- `position` — a server's GTID position changed in a domain (`server_id`, `domain`, `gtid`, `seq_no`)
- `health`, `read_only`, `fenced` — a server's state changed (`server_id`, …)
- `link` — a replication connection appeared, changed state or lag, or went away (`link_id`, `replica_server_id`, …)
- `operation` — an operation's state or one of its steps changed (`operation_id`, `type`, `state`, `steps`)
- `drill` — a drill run changed state (`drill_run_id`, `operation_id`, `state`: running, passed, failed)
- `failover_not_confirmed` — the master looked lost to the control plane only (`server_id`, `detail`)
- `alert` — an operation left by a stopped instance was reconciled (`kind`, `operation_id`, `type`, `message`)
- `token_invalid` — the caller's token was revoked or expired; the stream ends (checked every poll interval)

The browser's EventSource cannot send the bearer token: read it with fetch and a streaming body."""


#: Most events written in one piece: what arrived together (a collector cycle, a batch relayed from the worker) goes
#: to the socket as one write of frames encoded once for every stream, not a write per event per stream — the
#: fan-out to a thousand dashboards was the web process's main cost.
BATCH_EVENTS_MAX = 256


async def _stream(
    bus: EventBus, cluster_id: int, token_valid: Callable[[], Awaitable[bool]], check_s: float
) -> AsyncIterator[ServerSentEvent | bytes]:
    loop = asyncio.get_running_loop()
    async with bus.subscribe(cluster_id) as subscription:
        subscribed = SubscribedEvent(cluster_id=cluster_id)
        yield ServerSentEvent(event=subscribed.event, data=subscribed.model_dump_json(exclude_none=True))
        next_check = loop.time() + check_s
        while True:
            event = None
            try:
                async with asyncio.timeout(max(0.0, next_check - loop.time())):  # no task per wait, unlike wait_for
                    event = await subscription.next()
            except TimeoutError:
                pass
            if loop.time() >= next_check:
                if not await token_valid():
                    invalid = TokenInvalidEvent(cluster_id=cluster_id, message="the token was revoked or expired")
                    yield ServerSentEvent(event=invalid.event, data=invalid.model_dump_json(exclude_none=True))
                    return
                next_check = loop.time() + check_s
            if event is None:
                continue
            batch = [event, *subscription.take_waiting(BATCH_EVENTS_MAX - 1)]
            yield b"".join(waiting.sse_frame for waiting in batch)


@router.get(
    "/clusters/{cluster_id}/events",
    summary="Cluster changes as server-sent events",
    description=EVENTS_DESCRIPTION,
    response_class=EventStreamResponse,
    responses={200: {"model": ClusterEventData, "description": "An endless event stream; each event's data as here."}},
)
async def cluster_events(
    request: Request,
    session: SessionDep,
    bus: BusDep,
    settings: SettingsDep,
    principal: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
) -> EventSourceResponse:
    await ClusterService(session).get(cluster_id)
    streams: StreamRegistry = request.app.state.streams
    streams.admit(principal.token_id, principal.name)  # 429 here, before the stream opens, past a cap

    async def token_valid() -> bool:
        return await streams.still_valid(principal.token_id)

    async def stream() -> AsyncIterator[ServerSentEvent | bytes]:
        async with streams.held(principal.token_id):
            async for event in _stream(bus, cluster_id, token_valid, settings.poll_interval_s):
                yield event

    return EventSourceResponse(stream(), ping=settings.events_ping_s)
