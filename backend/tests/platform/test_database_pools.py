"""Requests never hold up the work that keeps clusters safe: on PostgreSQL the collector, operations, the failover
monitor and drill scheduling use a pool of connections of their own (database_background_pool_size), so a room of
dashboards that takes every request connection delays other requests only."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from ferry_control.core.db import session_scope
from tests.conftest import LiveFactory
from tests.ferryd_cluster import WAIT_S, FerrydCluster
from tests.helpers import register


async def test_a_collector_cycle_completes_while_requests_hold_every_request_connection(
    live_app: LiveFactory, ferryd: FerrydCluster
) -> None:
    async with live_app(database_pool_size=1, database_pool_overflow=0) as live:
        cluster_id, _ = await register(live.client, ferryd)
        async with session_scope(live.app.state.sessionmaker) as held:
            await held.execute(text("SELECT 1"))  # the only request connection, checked out
            waiting = asyncio.create_task(live.client.get(f"/api/v1/clusters/{cluster_id}/servers"))
            report = await asyncio.wait_for(live.app.state.collector.run_cycle(), WAIT_S)
            assert (report.polled, report.failed) == (3, 0)
            assert not waiting.done(), "a request waits for the request pool"
        answered = await asyncio.wait_for(waiting, WAIT_S)
        assert answered.status_code == 200
        assert all(s["health"] == "healthy" for s in answered.json()), answered.json()
