"""The app's lifespan runs the collector in the background when enabled, and stops it on shutdown."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.main import create_app

WAIT_S = 30.0


async def test_the_collector_runs_in_the_lifespan(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    app = create_app(
        settings.model_copy(update={"collector_enabled": True, "poll_interval_s": 0.05}), sessionmaker=sessionmaker
    )
    collector = app.state.collector
    async with app.router.lifespan_context(app):
        assert collector.running
        async with asyncio.timeout(WAIT_S):
            while collector.last_cycle_at is None or collector.last_retention is None:
                await asyncio.sleep(0.01)
    assert not collector.running
