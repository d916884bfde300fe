"""The event relay between the processes of one deployment on SQLite (a web process and its worker), where there
is no LISTEN/NOTIFY: what a process publishes is written to `relayed_events` in batches (the same payloads as the
PostgreSQL relay's notifications, services/event_relay.py), and every process reads the rows it has not seen every
`RELAY_POLL_S`, delivering the other processes' events to its subscribers. Rows are forgotten after
`RELAY_KEEP_S`; a process that starts reads only what is written from then on."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.core.metrics import Metrics
from ferry_control.repositories.coordination import RelayedEventRepository
from ferry_control.services.event_bus import EventBus
from ferry_control.services.event_relay import SEND_BATCH_EVENTS_MAX, OutboxRelay, pack, unpack

log = logging.getLogger(__name__)

#: How often the relayed rows are read: an event reaches the other process within this (plus its write).
RELAY_POLL_S = 0.1
#: Rows read at once.
READ_BATCH_ROWS = 500
#: How long relayed rows are kept.
RELAY_KEEP_S = 120.0
#: How often old rows are forgotten.
FORGET_EVERY_S = 30.0


class DatabaseEventRelay(OutboxRelay):
    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], bus: EventBus, instance_id: str, metrics: Metrics
    ):
        super().__init__(bus, instance_id, metrics, "ferry-event-relay-writer", "ferry-event-relay-reader")
        self._sessionmaker = sessionmaker

    async def _send_forever(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while len(batch) < SEND_BATCH_EVENTS_MAX and not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            try:
                payloads, too_big = pack(self.instance_id, self._seq, batch)
                self._seq += len(payloads)
                async with session_scope(self._sessionmaker) as session:
                    await RelayedEventRepository(session).add(self.instance_id, payloads)
                self._metrics.event_relay_events.labels("sent").inc(len(batch) - too_big)
                self._metrics.event_relay_events.labels("dropped").inc(too_big)
            except Exception:
                log.warning("could not relay %d cluster events to the other processes", len(batch), exc_info=True)
                self._metrics.event_relay_events.labels("dropped").inc(len(batch))
                await asyncio.sleep(RELAY_POLL_S)
            finally:
                for _ in batch:
                    self._outbox.task_done()

    async def _listen_forever(self) -> None:
        last_id: int | None = None
        forget_at = 0.0
        loop = asyncio.get_running_loop()
        while True:
            try:
                async with session_scope(self._sessionmaker) as session:
                    rows = RelayedEventRepository(session)
                    if last_id is None:
                        last_id = await rows.last_id()
                    batch = await rows.after(last_id, READ_BATCH_ROWS)
                    if loop.time() >= forget_at:
                        await rows.forget_before(datetime.now(UTC) - timedelta(seconds=RELAY_KEEP_S))
                        forget_at = loop.time() + FORGET_EVERY_S
                self.listening = True
            except Exception:
                if self.listening:
                    log.warning("could not read the events of the other processes", exc_info=True)
                self.listening = False
                batch = []
            for row in batch:
                last_id = row.id
                if row.origin == self.instance_id:
                    continue
                try:
                    _, events = unpack(row.payload)
                except ValueError as e:
                    log.warning("ignored relayed row %s: %s", row.id, e)
                    continue
                for event in events:
                    self._bus.deliver(event)
                self._metrics.event_relay_events.labels("received").inc(len(events))
            if len(batch) < READ_BATCH_ROWS:
                await asyncio.sleep(RELAY_POLL_S)  # a period between reads, not a wait for a condition
