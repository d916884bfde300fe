"""Event streams under load: a token may hold `events_streams_per_token_max` streams — the next one is refused with a
429 naming the limit while the open ones keep receiving events —, however many streams are open, their tokens
are checked in one read per interval (a revoked token still ends its streams), and a burst of events goes to a
stream in one write while the client still reads each event, in order."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from contextlib import AsyncExitStack
from pathlib import Path

import httpx
import pytest

from ferry_control.core.db import session_scope
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.streams import StreamRegistry
from ferry_control.services.tokens import TokenService
from tests.collection.test_collector import sse_events, viewer_events
from tests.conftest import LiveFactory, migrated_database
from tests.helpers import WAIT_S, serve
from tests.operations.test_operation_faults import ApiProcess, app_settings, operator_token


def test_an_events_frame_is_the_server_sent_event_of_its_type_and_data() -> None:
    event = ClusterEvent(7, "position", {"registered_server_id": 1, "domain": 2, "gtid": "2-1-30", "seq_no": 30})
    assert event.sse_frame == f"event: position\r\ndata: {event.json}\r\n\r\n".encode()
    assert json.loads(event.json) == {
        "event": "position", "cluster_id": 7, "at": event.at.isoformat(),
        "registered_server_id": 1, "domain": 2, "gtid": "2-1-30", "seq_no": 30,
    }  # fmt: skip
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
                    data = {"registered_server_id": 1, "domain": 0, "gtid": f"0-1-{seq_no}", "seq_no": seq_no}
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

            live.app.state.bus.publish(
                ClusterEvent(cluster_id, "health", {"registered_server_id": 1, "state": "healthy"})
            )
            # Published from another thread (a sync callback run in a thread pool): handed to the streams' loop.
            event = ClusterEvent(cluster_id, "health", {"registered_server_id": 2, "state": "healthy"})
            await asyncio.to_thread(live.app.state.bus.publish, event)
            async with asyncio.timeout(WAIT_S):
                for reader in events:
                    for server_id in (1, 2):
                        name, data = await anext(reader)
                        while name != "health":
                            name, data = await anext(reader)
                        assert data["registered_server_id"] == server_id

            async with session_scope(live.app.state.sessionmaker) as session:
                token = next(t for t in await TokenService(session, live.settings).list() if t.name == "live-viewer")
                await TokenService(session, live.settings).revoke(token.id)
            async with asyncio.timeout(WAIT_S):
                for reader in events:
                    name, _ = await anext(reader)
                    while name != "token_invalid":
                        name, _ = await anext(reader)
        assert streams.open == 0, "every closed stream gave its place back"


async def test_the_tokens_of_every_stream_are_read_in_one_query(live_app: LiveFactory) -> None:
    """Three streams of two tokens: one read says which tokens still authenticate — a revoked one does not, nor a
    token whose stream never opened."""
    async with live_app() as live:
        registry = StreamRegistry(live.app.state.sessionmaker, per_token_max=5, total_max=10, check_s=3600.0)
        async with session_scope(live.app.state.sessionmaker) as session:
            tokens = await TokenService(session, live.settings).list()
            ids = [t.id for t in tokens]
            await TokenService(session, live.settings).revoke(ids[2])
        async with registry.held(ids[0]), registry.held(ids[0]), registry.held(ids[1]), registry.held(ids[2]):
            assert registry.open == 4
            assert await registry.valid_tokens() == {ids[0], ids[1]} and registry.checks == 1
        assert registry.open == 0
        assert await registry.valid_tokens() == set(), "no stream open, no token asked for"


async def test_a_client_that_stops_reading_holds_no_other_stream_up(live_app: LiveFactory) -> None:
    """A dashboard whose socket stops taking data (a tiny receive buffer, never read) while a burst of 20,000 events
    goes out: another dashboard still gets the whole burst, in order, and the stalled stream stays open. (What a
    stalled stream keeps and drops is `test_sse.py`'s.)"""
    burst = 20_000
    async with live_app(events_queue_max=20) as live:
        cluster_id = (await live.client.post("/api/v1/clusters", json={"name": "stalled"})).json()["id"]
        headers = live.tokens.header("viewer")
        tiny_buffer = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)]
        async with (
            serve(live.app) as base,
            httpx.AsyncClient(timeout=WAIT_S, headers=headers) as reading,
            httpx.AsyncClient(
                timeout=WAIT_S, headers=headers, transport=httpx.AsyncHTTPTransport(socket_options=tiny_buffer)
            ) as stalled,
        ):
            url = f"{base}/api/v1/clusters/{cluster_id}/events"
            async with reading.stream("GET", url) as fast_stream, stalled.stream("GET", url) as slow_stream:
                fast = sse_events(fast_stream)
                assert (await anext(fast))[0] == "subscribed" and slow_stream.status_code == 200
                received: list[int] = []

                async def read_fast() -> None:
                    while not received or received[-1] < burst:
                        name, data = await anext(fast)
                        if name == "position":
                            received.append(data["seq_no"])

                reader = asyncio.create_task(read_fast())
                for start in range(0, burst, 100):  # a hundred per turn of the loop, as a busy collector sends them
                    for seq_no in range(start + 1, start + 101):
                        data = {"registered_server_id": 1, "domain": 0, "gtid": f"0-1-{seq_no}", "seq_no": seq_no}
                        live.app.state.bus.publish(ClusterEvent(cluster_id, "position", data))
                    await asyncio.sleep(0)
                async with asyncio.timeout(WAIT_S):
                    await reader
                assert received == sorted(set(received)) and received[-1] == burst
                assert len(live.app.state.stream_hub) == 2, "the stalled stream is still open"


async def test_stopping_the_process_ends_its_streams_and_it_exits(admin_database_url: str, tmp_path: Path) -> None:
    """SIGTERM to the API with a dashboard open: the stream ends at once (the client sees its end) and the process
    exits by itself, instead of the server waiting on a response that never ends."""
    for url in migrated_database(admin_database_url, "ferry_streams_stop"):
        settings = app_settings(url)
        token = await operator_token(settings)
        api = ApiProcess(settings, tmp_path / "api.log")
        base = await api.start()
        try:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=base, headers=headers, timeout=WAIT_S) as client:
                cluster_id = (await client.post("/api/v1/clusters", json={"name": "open"})).json()["id"]
                async with client.stream("GET", f"/api/v1/clusters/{cluster_id}/events") as stream:
                    events = sse_events(stream)
                    assert (await anext(events))[0] == "subscribed"
                    assert api.process is not None
                    api.process.send_signal(signal.SIGTERM)
                    async with asyncio.timeout(WAIT_S):
                        with pytest.raises(StopAsyncIteration):
                            while True:
                                await anext(events)
            # uvicorn ends by raising the signal it handled again, once it has shut down.
            assert api.process.wait(WAIT_S) in (0, -signal.SIGTERM), (tmp_path / "api.log").read_text()
        finally:
            api.stop()


async def test_a_token_check_the_database_refuses_keeps_the_streams_and_the_checks_going(
    live_app: LiveFactory,
) -> None:
    """The tokens' read fails once (the database away for a moment): the streams stay open, and the next interval's
    check still ends a stream whose token was revoked."""
    async with live_app(poll_interval_s=0.2) as live:
        cluster_id = (await live.client.post("/api/v1/clusters", json={"name": "checked"})).json()["id"]
        registry = live.app.state.streams
        real = registry.valid_tokens
        failed = asyncio.Event()

        async def refuse_once() -> set[int]:
            if not failed.is_set():
                failed.set()
                raise OSError("the database is away")
            return await real()

        registry.valid_tokens = refuse_once
        async with viewer_events(live.app, live.tokens, cluster_id) as events:
            async with asyncio.timeout(WAIT_S):
                await failed.wait()
            async with session_scope(live.app.state.sessionmaker) as session:
                token = next(t for t in await TokenService(session, live.settings).list() if t.name == "live-viewer")
                await TokenService(session, live.settings).revoke(token.id)
            async with asyncio.timeout(WAIT_S):
                name, _ = await anext(events)
                while name != "token_invalid":
                    name, _ = await anext(events)
