"""The control plane outlives its database's restarts: PostgreSQL stopped and started again under a running API
(a private server for this test, on a unix socket of its own) — the collector logs the failed cycles, keeps its
loop, and records the cluster's next change once the database is back, without a restart of the API."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ferry_control.core.migrate import upgrade
from tests.conftest import LiveFactory, create_database
from tests.ferryd_cluster import REPO_ROOT, FerrydCluster
from tests.helpers import WAIT_S, register
from tests.waiting import eventually

POSTGRES = REPO_ROOT / "scripts" / "ensure-postgres.sh"


def postgres(action: str, directory: Path) -> str:
    done = subprocess.run([str(POSTGRES), action, str(directory)], capture_output=True, text=True, timeout=WAIT_S * 2)
    assert done.returncode == 0, f"ensure-postgres.sh {action}: {done.stderr}"
    return done.stdout.strip()


@pytest.fixture
def private_postgres() -> Iterator[tuple[Path, str]]:
    """A PostgreSQL server of this test's own (so stopping it touches no other test), and a migrated database on it."""
    directory = Path(tempfile.mkdtemp(prefix="ferry-pg-restart."))  # short: the socket path has a length limit
    try:
        server = postgres("start", directory)
        url = create_database(server, "ferry_restart")
        upgrade(url)
        yield directory, url
    finally:
        postgres("stop", directory)
        subprocess.run(["rm", "-rf", str(directory)], check=False)


async def test_the_collector_resumes_after_postgresql_restarts(
    live_app: LiveFactory,
    ferryd_factory: Callable[..., FerrydCluster],
    private_postgres: tuple[Path, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    directory, url = private_postgres
    ferryd = ferryd_factory()
    async with live_app(database_url=url, collector_enabled=True, poll_interval_s=0.2) as live:
        cluster_id, ids = await register(live.client, ferryd)
        collector = live.app.state.collector

        async def master_position() -> str | None:
            response = await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}")
            return response.json()["gtid_current_pos"] if response.status_code == 200 else None

        before = ferryd.write(1, domains=(1,))

        async def seen_before() -> bool:
            return await master_position() == before

        await eventually("the collector to record the first write", seen_before, WAIT_S)

        caplog.set_level(logging.WARNING, logger="ferry_control")
        await asyncio.to_thread(postgres, "stop", directory)
        failed = ("collector cycle failed", "could not take or renew the collector's lease")
        await eventually(
            "the collector to notice the database is gone",
            lambda: any(any(f in r.getMessage() for f in failed) for r in caplog.records),
            WAIT_S,
        )
        after = ferryd.write(1, domains=(1,))
        await asyncio.to_thread(postgres, "start", directory)

        async def seen_after() -> bool:
            return await master_position() == after

        await eventually("the collector to record the write made while the database was down", seen_after, WAIT_S)
        assert collector.running, "the same collector loop, never restarted"
