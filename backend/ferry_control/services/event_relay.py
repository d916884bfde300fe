"""The event relay between API instances on one PostgreSQL database (LISTEN/NOTIFY), so an SSE client of any
instance sees the events of all: the collector's (which only the leader runs) and the operation steps of whichever
instance runs the operation. On SQLite there is one instance by nature and no relay.

- Out: every event published on this instance's bus is queued (bounded, `OUTBOX_EVENTS_MAX`; the oldest is dropped
  when full) and a sender task sends what is queued, in order, as `SELECT pg_notify('ferry_cluster_events', …)`
  in one transaction per batch on a connection of its own. A notification carries several events as JSON under
  PostgreSQL's 8000-byte limit, with the origin instance's id and a sequence number; an event too big on its own
  goes with its scalar fields only (`"truncated": true`), which is enough for a client to know what to re-read.
- In: a listener task holds a dedicated connection with `LISTEN ferry_cluster_events` and delivers the other
  instances' events to this instance's subscribers (its own are skipped). A quiet connection is checked every
  `LISTEN_CHECK_S`; a lost one is logged and reconnected with backoff. Events sent while it was down are missed
  (SSE clients re-read everything when they reconnect; the dashboard also polls).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from ferry_control.core.background import BackgroundTask
from ferry_control.core.metrics import Metrics
from ferry_control.repositories.notifications import Notifications
from ferry_control.services.event_bus import ClusterEvent, EventBus, put_dropping_oldest

log = logging.getLogger(__name__)

CHANNEL = "ferry_cluster_events"
#: PostgreSQL refuses a NOTIFY payload of 8000 bytes or more.
PAYLOAD_BYTES_MAX = 7999
#: Events waiting to be sent; past this the oldest is dropped (the database is down or too slow).
OUTBOX_EVENTS_MAX = 10_000
#: Most events sent in one transaction.
SEND_BATCH_EVENTS_MAX = 1000
#: Strings longer than this are left out of a truncated event.
TRUNCATED_STRING_CHARS_MAX = 200
RECONNECT_BACKOFF_S_MIN = 0.5
RECONNECT_BACKOFF_S_MAX = 30.0
CONNECT_TIMEOUT_S = 5
#: The relay's connections as pg_stat_activity shows them.
SENDER_APPLICATION_NAME = "ferry-event-sender"
LISTENER_APPLICATION_NAME = "ferry-event-listener"
#: How often a quiet listening connection is checked (SELECT 1), and how long the check may take.
LISTEN_CHECK_S = 10.0
LISTEN_CHECK_TIMEOUT_S = 5.0
#: On stop, how long the events still queued may take to be sent.
STOP_FLUSH_S = 2.0


def libpq_conninfo(database_url: str) -> str:
    """The SQLAlchemy URL (`postgresql+psycopg://…`) as a libpq connection URI for psycopg."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


def _encode_event(event: ClusterEvent) -> str:
    body = {"cluster_id": event.cluster_id, "type": event.type, "at": event.at.isoformat(), "data": event.data.fields()}
    return json.dumps(body, separators=(",", ":"))


def _truncated(event: ClusterEvent) -> ClusterEvent:
    """The event with its scalar fields only (ids, states), marked `truncated`."""

    def small(value: Any) -> bool:
        if isinstance(value, str):
            return len(value) <= TRUNCATED_STRING_CHARS_MAX
        return value is None or isinstance(value, bool | int | float)

    data = {key: value for key, value in event.data.fields().items() if small(value)}
    return ClusterEvent.relayed(event.cluster_id, event.type, {**data, "truncated": True}, event.at)


def _envelope(origin: str, seq: int, parts: Sequence[str]) -> str:
    return f'{{"origin":{json.dumps(origin)},"seq":{seq},"events":[{",".join(parts)}]}}'


def pack(origin: str, seq: int, events: Sequence[ClusterEvent]) -> tuple[list[str], int]:
    """The events, in order, as notification payloads of under `PAYLOAD_BYTES_MAX` bytes numbered from `seq`;
    and how many events could not be sent even truncated."""
    room = PAYLOAD_BYTES_MAX - len(_envelope(origin, 10**18, []).encode())
    payloads: list[str] = []
    parts: list[str] = []
    size = 0
    dropped = 0
    for event in events:
        part = _encode_event(event)
        if len(part.encode()) > room:
            part = _encode_event(_truncated(event))
            if len(part.encode()) > room:
                dropped += 1
                continue
        part_bytes = len(part.encode())
        if parts and size + 1 + part_bytes > room:
            payloads.append(_envelope(origin, seq + len(payloads), parts))
            parts, size = [], 0
        size += part_bytes + (1 if parts else 0)
        parts.append(part)
    if parts:
        payloads.append(_envelope(origin, seq + len(payloads), parts))
    assert all(len(p.encode()) <= PAYLOAD_BYTES_MAX for p in payloads)
    return payloads, dropped


def unpack(payload: str) -> tuple[str, list[ClusterEvent]]:
    """A notification's origin instance and events; ValueError when it is not one of ours."""
    try:
        body = json.loads(payload)
        events = [
            ClusterEvent.relayed(int(e["cluster_id"]), str(e["type"]), dict(e["data"]), datetime.fromisoformat(e["at"]))
            for e in body["events"]
        ]
        return str(body["origin"]), events
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a cluster event notification: {e!r}") from e


def _unexpected(error: Exception) -> Exception | None:
    """The error when it is worth a traceback in the log: not a lost or refused connection."""
    expected = psycopg.OperationalError | psycopg.InterfaceError | OSError | TimeoutError
    return None if isinstance(error, expected) else error


class OutboxRelay:
    """What both relays share (this one, and the SQLite one of event_relay_db.py): every event published on this
    process's bus queued in a bounded outbox (the oldest dropped when full) for a sender task, a listener task
    delivering the other processes' events, and stopping with `STOP_FLUSH_S` for what is still queued. Subclasses
    give the two loops and the name of who is on the other side (for the log)."""

    peers = "processes"

    def __init__(self, bus: EventBus, instance_id: str, metrics: Metrics, sender_name: str, listener_name: str):
        self._bus = bus
        self.instance_id = instance_id
        self._metrics = metrics
        self._outbox: asyncio.Queue[ClusterEvent] = asyncio.Queue(OUTBOX_EVENTS_MAX)
        #: Number of the next payload this process sends (numbers each origin's payloads in order).
        self._seq = 0
        self._sender = BackgroundTask(self._send_forever, sender_name)
        self._listener = BackgroundTask(self._listen_forever, listener_name)
        #: Whether the other processes' events arrive.
        self.listening = False

    async def _send_forever(self) -> None:
        raise NotImplementedError

    async def _listen_forever(self) -> None:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._sender.running and self._listener.running

    def start(self) -> None:
        self._bus.forward = self._enqueue
        self._sender.start()
        self._listener.start()

    async def stop(self) -> None:
        """Stops relaying; what is still queued gets `STOP_FLUSH_S` to be sent."""
        self._bus.forward = None
        try:
            async with asyncio.timeout(STOP_FLUSH_S):
                await self._outbox.join()
        except TimeoutError:
            log.warning("stopping: %d cluster events were not relayed to the other %s", self._outbox.qsize(),
                        self.peers)  # fmt: skip
        await self._listener.stop()
        await self._sender.stop()
        self._set_listening(False)

    def _set_listening(self, listening: bool) -> None:
        self.listening = listening
        self._metrics.event_relay_listening.set(1 if listening else 0)

    def _enqueue(self, event: ClusterEvent) -> None:
        if dropped := put_dropping_oldest(self._outbox, event):
            self._metrics.event_relay_events.labels("dropped").inc(dropped)


class EventRelay(OutboxRelay):
    peers = "instances"

    def __init__(self, database_url: str, bus: EventBus, instance_id: str, metrics: Metrics):
        super().__init__(bus, instance_id, metrics, "ferry-event-relay-sender", "ferry-event-relay-listener")
        self._conninfo = libpq_conninfo(database_url)
        #: The sender's connection, opened when first needed and replaced when it fails.
        self._sender_connection: psycopg.AsyncConnection[Any] | None = None

    async def _connect(self, application_name: str) -> psycopg.AsyncConnection[Any]:
        return await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name=application_name
        )

    # -- out -------------------------------------------------------------------------------------------------

    async def _send_forever(self) -> None:
        backoff_s = RECONNECT_BACKOFF_S_MIN
        try:
            while True:
                batch = [await self._outbox.get()]
                while len(batch) < SEND_BATCH_EVENTS_MAX and not self._outbox.empty():
                    batch.append(self._outbox.get_nowait())
                failure: Exception | None = None
                try:
                    sent = await self._send(batch)
                except Exception as e:
                    sent, failure = 0, e
                for _ in batch:
                    self._outbox.task_done()
                self._metrics.event_relay_events.labels("sent").inc(sent)
                self._metrics.event_relay_events.labels("dropped").inc(len(batch) - sent)
                if failure is None:
                    backoff_s = RECONNECT_BACKOFF_S_MIN
                    continue
                log.warning("could not relay %d cluster events to the other instances (%s); next attempt in %.1f s",
                            len(batch), failure, backoff_s, exc_info=_unexpected(failure))  # fmt: skip
                await self._close_sender()
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, RECONNECT_BACKOFF_S_MAX)
        finally:
            await self._close_sender()

    async def _send(self, batch: list[ClusterEvent]) -> int:
        """Sends the batch in one transaction; returns how many events went (the others were too big). A
        connection that fails (e.g. the database restarted since its last use) is replaced once."""
        payloads, too_big = pack(self.instance_id, self._seq, batch)
        self._seq += len(payloads)
        if too_big:
            log.warning("%d cluster events were too big to relay to the other instances", too_big)
        if not payloads:
            return 0
        for attempt in (1, 2):
            reused = self._sender_connection is not None and not self._sender_connection.closed
            if not reused:
                self._sender_connection = await self._connect(SENDER_APPLICATION_NAME)
            connection = self._sender_connection
            assert connection is not None
            try:
                await Notifications(connection).notify(CHANNEL, payloads)
                break
            except (psycopg.OperationalError, psycopg.InterfaceError):
                await self._close_sender()
                if attempt == 2 or not reused:
                    raise
        return len(batch) - too_big

    async def _close_sender(self) -> None:
        if self._sender_connection is not None:
            connection, self._sender_connection = self._sender_connection, None
            await connection.close()

    # -- in --------------------------------------------------------------------------------------------------

    async def _listen_forever(self) -> None:
        backoff_s = RECONNECT_BACKOFF_S_MIN
        lost_at: float | None = None
        while True:
            try:
                async with await self._connect(LISTENER_APPLICATION_NAME) as connection:
                    listening = Notifications(connection)
                    await listening.listen(CHANNEL)
                    self._set_listening(True)
                    if lost_at is not None:
                        log.warning("listening for the other instances' events again, after %.1f s without "
                                    "(their events of that time were missed)", time.monotonic() - lost_at)  # fmt: skip
                    else:
                        log.info("listening for the other instances' events (%s)", CHANNEL)
                    lost_at, backoff_s = None, RECONNECT_BACKOFF_S_MIN
                    while True:
                        async for notify in connection.notifies(timeout=LISTEN_CHECK_S):
                            self._receive(notify.payload)
                        async with asyncio.timeout(LISTEN_CHECK_TIMEOUT_S):
                            await listening.ping()
            except Exception as e:
                self._set_listening(False)
                lost_at = lost_at if lost_at is not None else time.monotonic()
                log.warning("not listening for the other instances' events (%s); reconnecting in %.1f s",
                            str(e) or type(e).__name__, backoff_s, exc_info=_unexpected(e))  # fmt: skip
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, RECONNECT_BACKOFF_S_MAX)

    def _receive(self, payload: str) -> None:
        try:
            origin, events = unpack(payload)
        except ValueError as e:
            log.warning("ignored a notification on %s: %s", CHANNEL, e)
            return
        if origin == self.instance_id:
            return
        for event in events:
            self._bus.deliver(event)
        self._metrics.event_relay_events.labels("received").inc(len(events))
