"""The stream hub: the open event streams of this process and their fan-out. What the bus delivers in one turn of
the loop is encoded once and written to every stream of its cluster in one pass, in the caller — no task, queue or
wake-up per stream —, and one timer per process sends the keep-alive pings and ends the streams whose token was
revoked or expired (their tokens read in one query per interval, `services/streams.py`). The positions of the
servers the streams show also come from live reads (`services/live_positions.py`), ahead of the collector's.

A stream is a response held open (`EventStreamResponse`, `api/events.py`), written through this hub: its request's
own task only waits for the client to leave. A send normally completes at once (the socket takes it); one that has
to wait — a client not reading — is carried on by a task of its own (`core/eager.py`) while what comes next for
that stream waits behind it, at most `events_queue_max` events, the oldest dropped first and counted. When the
process is asked to stop (SIGTERM or SIGINT as the server handles them, `core/stop_signals.py`) every stream ends at
once, so the server can close its connections.

Measured (backend/bench/dashboards.py, docs/benchmarks.md): with a task, a queue and a send timeout per stream,
a batch of events to 1,000 streams held the event loop for 60–70 ms, every request waiting behind it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence

from starlette.types import Message, Send

from ferry_control.core.background import BackgroundTask
from ferry_control.core.eager import run_eagerly
from ferry_control.core.metrics import Metrics
from ferry_control.core.stop_signals import on_stop_signals
from ferry_control.schemas.events import PositionEvent, SubscribedEvent, TokenInvalidEvent
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.live_positions import LivePositions
from ferry_control.services.streams import StreamRegistry

log = logging.getLogger(__name__)

#: Most events written in one piece: what arrived together (a collector cycle, a batch relayed from the worker) goes
#: to each socket as one write of frames encoded once for every stream.
BATCH_EVENTS_MAX = 256
#: Streams written in one turn of the event loop before the loop serves anything else.
WRITES_PER_TURN = 64
#: The keep-alive: an SSE comment, which clients ignore.
PING_FRAME = b": ping\r\n\r\n"


def event_frame(name: str, data: str) -> bytes:
    """One server-sent event: its name and its data on one `data:` line (JSON has no raw line breaks)."""
    return f"event: {name}\r\ndata: {data}\r\n\r\n".encode()


class Listener:
    """One open stream: its client's `send`, what waits behind a send in flight, and whether it has ended."""

    def __init__(self, send: Send, cluster_id: int, token_id: int, backlog_max: int, dropped: Callable[[int], None]):
        self.cluster_id = cluster_id
        self.token_id = token_id
        self._send = send
        self._backlog_max = backlog_max
        self._backlog: deque[tuple[bytes, int]] = deque()
        self._backlog_events = 0
        self._writing: asyncio.Task[None] | None = None
        self._last: bytes | None = None  # the end was asked for: what to send last
        self.ended = False
        self._count_dropped = dropped

    def write(self, chunk: bytes, events: int = 1) -> None:
        """Sends `chunk` (`events` events) now, or after the send in flight, in order."""
        if self.ended or self._last is not None:
            return
        self._backlog.append((chunk, events))
        self._backlog_events += events
        while self._backlog_events > self._backlog_max and len(self._backlog) > 1:
            _, gone = self._backlog.popleft()
            self._backlog_events -= gone
            self._count_dropped(gone)
        self._pump()

    def end(self, last: bytes = b"") -> None:
        """Ends the stream once what was written before has gone, `last` its final bytes."""
        if self.ended or self._last is not None:
            return
        self._last = last
        self._pump()

    async def close(self) -> None:
        """The client left or the request is over: nothing more is sent; a send still in flight is cancelled."""
        self.ended = True
        self._backlog.clear()
        if self._writing is not None:
            self._writing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writing

    def _pump(self) -> None:
        while self._writing is None and not self.ended:
            if self._backlog:
                chunk = b"".join(chunk for chunk, _ in self._backlog)
                self._backlog.clear()
                self._backlog_events = 0
                self._start({"type": "http.response.body", "body": chunk, "more_body": True})
            elif self._last is not None:
                self._start({"type": "http.response.body", "body": self._last, "more_body": False})
                self.ended = True
            else:
                return

    def _start(self, message: Message) -> None:
        try:
            self._writing = run_eagerly(self._send(message))
        except Exception:  # noqa: BLE001 - the server refused the send: the client is gone, as its receive will say
            self.ended = True
            return
        if self._writing is not None:
            self._writing.add_done_callback(self._sent)

    def _sent(self, task: asyncio.Task[None]) -> None:
        self._writing = None
        if task.cancelled() or task.exception() is not None:
            self.ended = True
            return
        self._pump()


class StreamHub:
    """This process's streams by cluster, fed by the bus (`watchers`) and kept by one timer."""

    def __init__(
        self,
        bus: EventBus,
        registry: StreamRegistry,
        metrics: Metrics,
        check_s: float,
        ping_s: float,
        backlog_max: int,
        live: LivePositions | None = None,
    ):
        self.registry = registry
        self._metrics = metrics
        self._live = live
        self._check_s = check_s
        self._ping_s = ping_s
        self._backlog_max = backlog_max
        self._listeners: dict[int, set[Listener]] = {}
        self._pending: dict[int, list[ClusterEvent]] = {}
        self._flush_scheduled = False
        self._writes: deque[tuple[Listener, bytes, int]] = deque()
        self._write_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ticker = BackgroundTask(self._keep, "event-streams")
        self._restore_signals: Callable[[], None] = lambda: None
        self._stopping = False
        bus.watchers.append(self._on_event)

    def __len__(self) -> int:
        return sum(len(listeners) for listeners in self._listeners.values())

    def open(self, send: Send, cluster_id: int, token_id: int) -> Listener:
        """A new stream of `cluster_id`: it gets `subscribed` first, then every event of its cluster from now on."""
        listener = Listener(
            send, cluster_id, token_id, self._backlog_max, self._metrics.event_stream_events_dropped.inc
        )
        subscribed = SubscribedEvent(cluster_id=cluster_id)
        listener.write(event_frame(subscribed.event, subscribed.model_dump_json(exclude_none=True)), 0)
        if self._stopping:
            listener.end()
        else:
            self._listeners.setdefault(cluster_id, set()).add(listener)
            self._metrics.event_streams.inc()
        return listener

    def forget(self, listener: Listener) -> None:
        listeners = self._listeners.get(listener.cluster_id)
        if listeners is not None and listener in listeners:
            listeners.remove(listener)
            self._metrics.event_streams.dec()
            if not listeners:
                del self._listeners[listener.cluster_id]

    def watched(self) -> set[int]:
        """The clusters with a stream open here."""
        return set(self._listeners)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        self._ticker.start()
        self._restore_signals = on_stop_signals(self._loop, self.end_all)
        if self._live is not None:
            self._live.start(self.watched, self._enqueue)

    async def stop(self) -> None:
        self._restore_signals()
        if self._live is not None:
            await self._live.stop()
        self.end_all()
        await self._ticker.stop()

    def end_all(self) -> None:
        """Ends every stream (the process is stopping); streams opened after this end at once."""
        self._stopping = True
        for listener in self._all():
            listener.end()

    def _all(self) -> list[Listener]:
        return [listener for listeners in self._listeners.values() for listener in listeners]

    def _on_event(self, event: ClusterEvent) -> None:
        if (
            isinstance(event.data, PositionEvent)
            and self._live is not None
            and self._live.covers(event.data.registered_server_id)
        ):
            return  # its positions go out from live reads, never behind the collector's
        self._enqueue(event)

    def _enqueue(self, event: ClusterEvent) -> None:
        if self._loop is not None and _running_loop() is not self._loop:
            # Published from another thread: handed to the streams' loop, never touched from here.
            self._loop.call_soon_threadsafe(self._enqueue, event)
            return
        if event.cluster_id not in self._listeners:
            return
        self._pending.setdefault(event.cluster_id, []).append(event)
        if not self._flush_scheduled:
            asyncio.get_running_loop().call_soon(self._flush)  # what else arrives in this turn goes with it
            self._flush_scheduled = True

    def _flush(self) -> None:
        self._flush_scheduled = False
        pending, self._pending = self._pending, {}
        for cluster_id, events in pending.items():
            listeners = tuple(self._listeners.get(cluster_id, ()))
            for batch in _batches(events, BATCH_EVENTS_MAX):
                chunk = b"".join(event.sse_frame for event in batch)
                self._writes.extend((listener, chunk, len(batch)) for listener in listeners)
        if not self._write_scheduled:  # else the writes under way take these too, after theirs
            self._write_some()

    def _write_some(self) -> None:
        """At most WRITES_PER_TURN of the writes waiting, then the rest in a later turn of the loop: a batch for a
        thousand streams never holds the loop for all of them at once (a request's next step runs in between),
        and the writes keep their order."""
        self._write_scheduled = False
        for _ in range(min(WRITES_PER_TURN, len(self._writes))):
            listener, chunk, events = self._writes.popleft()
            listener.write(chunk, events)
        if self._writes:
            asyncio.get_running_loop().call_soon(self._write_some)
            self._write_scheduled = True

    async def _keep(self) -> None:
        loop = asyncio.get_running_loop()
        next_ping = loop.time() + self._ping_s
        while True:
            await asyncio.sleep(self._check_s)
            if not self._listeners:
                continue
            try:
                valid = await self.registry.valid_tokens()
            except Exception:  # the database away for a moment: the streams stay as they are, checked next time
                log.warning("event streams: their tokens could not be checked", exc_info=True)
                continue
            ping = loop.time() >= next_ping
            if ping:
                next_ping = loop.time() + self._ping_s
            for listener in self._all():
                if listener.token_id not in valid:
                    invalid = TokenInvalidEvent(
                        cluster_id=listener.cluster_id, message="the token was revoked or expired"
                    )
                    listener.end(event_frame(invalid.event, invalid.model_dump_json(exclude_none=True)))
                elif ping:
                    listener.write(PING_FRAME, 0)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _batches(events: Sequence[ClusterEvent], size: int) -> list[Sequence[ClusterEvent]]:
    return [events[start : start + size] for start in range(0, len(events), size)]
