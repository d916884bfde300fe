"""GET /clusters/{id}/events: the cluster's changes as server-sent events (see EVENTS_DESCRIPTION), written by this
process's stream hub (`services/stream_hub.py`) to the response held open here (`EventStreamResponse`).

The stream opens with a `subscribed` event, so a client knows from when on it will see changes. The tokens of all
open streams are checked again every poll interval, in one read (`services/streams.py`): once a stream's token is
revoked or expired, it sends `token_invalid` and ends. A token may hold `events_streams_per_token_max` streams, an
instance serve `events_streams_max` (429 `too_many_streams` beyond)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.events import ClusterEventData
from ferry_control.services.clusters import ClusterService
from ferry_control.services.stream_hub import StreamHub

#: The errors are JSON (ErrorBody), unlike the stream: named by reference so they are not put under its media type.
ERRORS = {
    status: {
        "description": entry["description"],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for status, entry in error_responses(401, 404, 422).items()
}
router = APIRouter(tags=["events"], responses=ERRORS)


class EventStreamResponse(Response):
    """An endless `text/event-stream` response: `subscribed`, then its cluster's events, until the client leaves,
    its token stops authenticating or the process stops."""

    media_type = "text/event-stream"

    def __init__(self, hub: StreamHub, cluster_id: int, token_id: int):
        self.status_code = 200
        self.background = None
        # Not cached by browsers or proxies, and not buffered by nginx-like proxies in front of the API.
        self.init_headers({"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
        self._hub = hub
        self._cluster_id = cluster_id
        self._token_id = token_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message = {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        if scope.get("method") == "HEAD":
            await send(start)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        async with self._hub.registry.held(self._token_id):
            await send(start)
            listener = self._hub.open(send, self._cluster_id, self._token_id)
            try:
                # The stream is written by the hub; this task only learns when the client leaves (or, the response
                # having ended, that it is over: a receive after the response says "disconnect").
                while (await receive())["type"] != "http.disconnect":
                    pass
            finally:
                self._hub.forget(listener)
                await listener.close()


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


@router.get(
    "/clusters/{cluster_id}/events",
    summary="Cluster changes as server-sent events",
    description=EVENTS_DESCRIPTION,
    response_class=EventStreamResponse,
    status_code=200,
    responses={200: {"model": ClusterEventData, "description": "An endless event stream; each event's data as here."}},
)
async def cluster_events(
    request: Request,
    session: SessionDep,
    principal: CurrentToken,
    cluster_id: int = Path(ge=1, le=ID_MAX, description="The cluster's id."),
) -> EventStreamResponse:
    await ClusterService(session).get(cluster_id)
    hub: StreamHub = request.app.state.stream_hub
    hub.registry.admit(principal.token_id, principal.name)  # 429 here, before the stream opens, past a cap
    return EventStreamResponse(hub, cluster_id, principal.token_id)
