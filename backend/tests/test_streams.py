"""Event streams under load: a token may hold `events_streams_per_token_max` streams — the next one is refused with a
429 naming the limit while the open ones keep receiving events — and however many streams are open, their tokens
are checked in one read per interval (a revoked token still ends its streams)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import httpx

from ferry_control.core.db import session_scope
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.streams import StreamRegistry
from ferry_control.services.tokens import TokenService
from tests.conftest import LiveFactory
from tests.helpers import WAIT_S, serve
from tests.test_collector import sse_events


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
