"""Event streams under load: a token may hold `events_streams_per_token_max` streams — the next one is refused with a
429 naming the limit while the open ones keep receiving events —, however many streams are open, their tokens
are checked in one read per interval (a revoked token still ends its streams), and a burst of events goes to a
stream in one write while the client still reads each event, in order."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import httpx
from sse_starlette import ServerSentEvent

from ferry_control.core.db import session_scope
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.streams import StreamRegistry
from ferry_control.services.tokens import TokenService
from tests.conftest import LiveFactory
from tests.helpers import WAIT_S, serve
from tests.test_collector import sse_events


def test_an_events_frame_is_the_server_sent_event_of_its_type_and_data() -> None:
    event = ClusterEvent(7, "position", {"server_id": 1, "domain": 2, "gtid": "2-1-30", "seq_no": 30})
    assert event.sse_frame == ServerSentEvent(event="position", data=event.json).encode()
    assert event.sse_frame is event.sse_frame, "encoded once, however many streams send it"


async def test_a_burst_of_events_reaches_a_stream_whole_and_in_order(live_app: LiveFactory) -> None:
    async with live_app(poll_interval_s=0.2) as live:
        cluster_id = (await live.client.post("/api/v1/clusters", json={"name": "burst"})).json()["id"]
        async with (
            serve(live.app) as base,
            httpx.AsyncClient(timeout=WAIT_S, headers=live.tokens.header("viewer")) as sse,
        ):
            async with sse.stream("GET", f"{base}/api/v1/clusters/{cluster_id}/events") as stream:
                reader = sse_events(stream)
                assert (await anext(reader))[0] == "subscribed"
                burst = 600  # more than one write's BATCH_EVENTS_MAX
                for seq_no in range(1, burst + 1):
                    data = {"server_id": 1, "domain": 0, "gtid": f"0-1-{seq_no}", "seq_no": seq_no}
                    live.app.state.bus.publish(ClusterEvent(cluster_id, "position", data))
                seen: list[int] = []
                async with asyncio.timeout(WAIT_S):
                    while len(seen) < burst:
                        name, data = await anext(reader)
                        if name == "position":
                            seen.append(data["seq_no"])
                assert seen == list(range(1, burst + 1))


async def test_streams_past_the_cap_are_refused_and_the_others_keep_receiving(live_app: LiveFactory) -> None:
    async with live_app(events_streams_per_token_max=3, poll_interval_s=0.2) as live:
        cluster_id = (await live.client.post("/api/v1/clusters", json={"name": "watched"})).json()["id"]
        streams = live.app.state.streams
        async with serve(live.app) as base, AsyncExitStack() as stack:
            url = f"{base}/api/v1/clusters/{cluster_id}/events"
            viewer = httpx.AsyncClient(timeout=WAIT_S, headers=live.tokens.header("viewer"))
            sse = await stack.enter_async_context(viewer)
            events = []
            for _ in range(3):
                stream = await stack.enter_async_context(sse.stream("GET", url))
                assert stream.status_code == 200
                reader = sse_events(stream)
                assert (await anext(reader))[0] == "subscribed"
                events.append(reader)
            refused = await sse.get(url)
            assert refused.status_code == 429, refused.text
            error = refused.json()["error"]
            assert error["code"] == "too_many_streams" and error["details"] == {"open": 3, "limit": 3, "per": "token"}
            assert "events_streams_per_token_max" in error["message"] and refused.headers["Retry-After"]
            # Another token is not held back by this one's streams.
            operator = httpx.AsyncClient(timeout=WAIT_S, headers=live.tokens.header("operator"))
            other = await stack.enter_async_context(operator)
            async with other.stream("GET", url) as fourth:
                assert fourth.status_code == 200

            live.app.state.bus.publish(ClusterEvent(cluster_id, "health", {"server_id": 1, "state": "healthy"}))
            async with asyncio.timeout(WAIT_S):
                for reader in events:
                    name, data = await anext(reader)
                    while name != "health":
                        name, data = await anext(reader)
                    assert data["server_id"] == 1

            async with session_scope(live.app.state.sessionmaker) as session:
                token = next(t for t in await TokenService(session, live.settings).list() if t.name == "live-viewer")
                await TokenService(session, live.settings).revoke(token.id)
            async with asyncio.timeout(WAIT_S):
                for reader in events:
                    name, _ = await anext(reader)
                    while name != "token_invalid":
                        name, _ = await anext(reader)
        assert streams.open == 0, "every closed stream gave its place back"


async def test_the_tokens_of_every_stream_are_read_in_one_query_per_interval(live_app: LiveFactory) -> None:
    """Three streams of two tokens ask whether their tokens are still valid: one read answers all of them until the
    interval has passed (here an hour), and a token whose stream never opened is not valid."""
    async with live_app() as live:
        registry = StreamRegistry(live.app.state.sessionmaker, per_token_max=5, total_max=10, check_s=3600.0)
        async with session_scope(live.app.state.sessionmaker) as session:
            ids = [t.id for t in await TokenService(session, live.settings).list()]
        async with registry.held(ids[0]), registry.held(ids[0]), registry.held(ids[1]):
            assert registry.open == 3
            answers = [await registry.still_valid(token) for token in (ids[0], ids[1], ids[0])]
            assert answers == [True, True, True] and registry.checks == 1
            assert await registry.still_valid(ids[2]) is False, "no stream of it is open"
            assert registry.checks == 1
        assert registry.open == 0
