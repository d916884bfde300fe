"""An in-process publish/subscribe hub for cluster events (position changes, health, links, operation steps), fed by
the collector and the operation runner. Watchers get every event as it is published, and must not block: the event
streams' hub (services/stream_hub.py, which writes them to every open stream) and a worker's pickup of announced
operations.
A subscriber (`subscribe`: an in-process reader that awaits events one by one, as the tests do) has a bounded
queue; when it is full the oldest event is dropped and counted, so a slow reader never holds the collector up.

With several API instances on PostgreSQL, what is published here is also handed to `forward` (the event relay,
services/event_relay.py), and events published by other instances arrive through `deliver`, so every instance's
subscribers see every instance's events."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, TypeVar

from ferry_control.schemas.events import EVENT_DATA, EventData, EventType


@dataclass(frozen=True)
class ClusterEvent:
    """One change of a cluster: its type and that type's data model (schemas/events.py). Made with `of(cluster_id,
    data)`; data given as a mapping (relayed from another instance) is validated into its type's model."""

    cluster_id: int
    type: EventType
    data: EventData
    at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        kind = EventType(self.type)
        object.__setattr__(self, "type", kind)
        data: EventData | Mapping[str, Any] = self.data
        if not isinstance(data, EventData):
            object.__setattr__(self, "data", EVENT_DATA[kind].model_validate(data))
        elif data.event != kind:
            raise ValueError(f"a {kind} event with {data.event} data")

    @classmethod
    def of(cls, cluster_id: int, data: EventData) -> ClusterEvent:
        return cls(cluster_id, data.event, data)

    @classmethod
    def relayed(cls, cluster_id: int, type: str, data: Mapping[str, Any], at: datetime) -> ClusterEvent:
        """An event as another instance sent it: its type by name, its data validated into that type's model
        (ValueError, or pydantic's ValidationError, when it is neither)."""
        kind = EventType(type)
        return cls(cluster_id, kind, EVENT_DATA[kind].model_validate(data), at)

    @cached_property
    def json(self) -> str:
        """The event as a stream sends it (`event`, `cluster_id`, `at` and its data), encoded once however many
        streams send it."""
        body = {
            "event": self.type.value,
            "cluster_id": self.cluster_id,
            "at": self.at.isoformat(),
            **self.data.fields(),
        }
        return json.dumps(body)

    @cached_property
    def sse_frame(self) -> bytes:
        """The event as one server-sent event (its type as the event name, `json` as its data), encoded once however
        many streams send it. JSON has no raw line breaks, so the data is one `data:` line."""
        return f"event: {self.type.value}\r\ndata: {self.json}\r\n\r\n".encode()


T = TypeVar("T")


def put_dropping_oldest(queue: asyncio.Queue[T], item: T) -> int:
    """Puts `item` on a bounded queue, first dropping its oldest items while it is full; returns how many."""
    dropped = 0
    while True:
        try:
            queue.put_nowait(item)
            return dropped
        except asyncio.QueueFull:
            queue.get_nowait()
            queue.task_done()
            dropped += 1


class Subscription:
    def __init__(self, cluster_id: int, queue_max: int):
        self.cluster_id = cluster_id
        self.queue: asyncio.Queue[ClusterEvent] = asyncio.Queue(maxsize=queue_max)
        #: Events dropped because the queue was full.
        self.dropped = 0

    def offer(self, event: ClusterEvent) -> None:
        self.dropped += put_dropping_oldest(self.queue, event)

    async def next(self) -> ClusterEvent:
        return await self.queue.get()


class EventBus:
    def __init__(self, queue_max: int):
        self._queue_max = queue_max
        self._subscribers: dict[int, set[Subscription]] = defaultdict(set)
        #: Also given every event published here (not those delivered from other instances): the relay to the
        #: other API instances, when there is one. Must not block.
        self.forward: Callable[[ClusterEvent], None] | None = None
        #: Given every event of every cluster, this instance's and relayed ones (a worker's pickup of announced
        #: operations). Must not block.
        self.watchers: list[Callable[[ClusterEvent], None]] = []

    def publish(self, event: ClusterEvent) -> None:
        """An event of this instance: to its subscribers, and to the other instances' through `forward`."""
        self.deliver(event)
        if self.forward is not None:
            self.forward(event)

    def deliver(self, event: ClusterEvent) -> None:
        """To this instance's subscribers only (an event another instance published)."""
        for watcher in self.watchers:
            watcher(event)
        for subscription in tuple(self._subscribers.get(event.cluster_id, ())):
            subscription.offer(event)

    def subscriber_count(self, cluster_id: int) -> int:
        return len(self._subscribers.get(cluster_id, ()))

    @asynccontextmanager
    async def subscribe(self, cluster_id: int) -> AsyncIterator[Subscription]:
        subscription = Subscription(cluster_id, self._queue_max)
        self._subscribers[cluster_id].add(subscription)
        try:
            yield subscription
        finally:
            self._subscribers[cluster_id].discard(subscription)
            if not self._subscribers[cluster_id]:
                del self._subscribers[cluster_id]
