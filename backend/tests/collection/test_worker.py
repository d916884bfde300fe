"""A web process and a worker process (`python -m ferry_control worker`, a real subprocess) on one database —
PostgreSQL, and the embedded SQLite default: the worker collects, runs the operations the web process accepts and
its events reach the web process's streams; the web process serves health and the collector's cycles from the
database; SIGTERM stops the worker cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ferry_control.core.migrate import upgrade
from ferry_control.schemas.events import OperationEvent
from tests.conftest import LOOPBACK_WEBHOOKS, SECRET_KEY, TOKEN_PEPPER, Live, LiveFactory
from tests.ferryd_cluster import NODE_TOKEN, WAIT_S, FerrydCluster
from tests.helpers import register, stop_process
from tests.mariadb_cluster import eventually

BACKEND = Path(__file__).resolve().parents[2]
#: Bound on the worker's start (a Python process importing the control plane, then its database): generous, for a
#: machine busy with the rest of the suite.
STARTED_S = 90.0


@asynccontextmanager
async def worker_process(
    database_url: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[subprocess.Popen[str], str]]:
    """The worker, started (with `env` over the test settings) and awaited until it says it is ready; stopped by its
    pid (SIGTERM, then SIGKILL)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    settings = {
        **os.environ,
        "FERRY_DATABASE_URL": database_url, "FERRY_ENVIRONMENT": "test", "FERRY_TOKEN_PEPPER": TOKEN_PEPPER,
        "FERRY_SECRET_KEYS": SECRET_KEY, "FERRY_NODE_TOKEN": NODE_TOKEN, "FERRY_POLL_TIMEOUT_S": "5",
        "FERRY_UNREACHABLE_AFTER_FAILURES": "2", "FERRY_NODE_READ_RETRIES_MAX": "0",
        "FERRY_WEBHOOK_ALLOWED_HOSTS": str(LOOPBACK_WEBHOOKS).replace("'", '"'),
        "FERRY_DRILL_SCHEDULER_ENABLED": "false", "FERRY_OPERATION_PICKUP_INTERVAL_S": "0.5", **(env or {}),
    }  # fmt: skip
    log = (tmp_path / "worker.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "ferry_control", "worker", *args], cwd=BACKEND, env=settings, stdout=subprocess.PIPE,
        stderr=log, text=True,
    )  # fmt: skip

    async def said() -> str:
        """The worker's next line on its standard output; a process start is bounded by STARTED_S."""
        assert process.stdout is not None
        try:
            return await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), STARTED_S)
        except TimeoutError:
            raise AssertionError(
                f"the worker said nothing within {STARTED_S:g} s; its log: {(tmp_path / 'worker.log').read_text()}"
            ) from None

    try:
        line = await said()
        if line.startswith("worker metrics "):  # with --metrics-port: where it serves them, first
            process.metrics_address = line.split()[-1]  # type: ignore[attr-defined]
            line = await said()
        assert line.startswith("worker ready "), (
            f"worker said {line!r}; its log: {(tmp_path / 'worker.log').read_text()}"
        )
        yield process, line.split()[-1]
    finally:
        stop_process(process, WAIT_S)
        log.close()


@pytest.fixture(params=["postgresql", "sqlite"])
def shared_database(request: pytest.FixtureRequest, live_database_url: str, tmp_path: Path) -> Iterator[str]:
    if request.param == "postgresql":
        yield live_database_url
    else:
        url = f"sqlite+aiosqlite:///{tmp_path / 'ferry.sqlite3'}"
        upgrade(url)
        yield url


async def operation_state(live: Live, cluster_id: int, operation_id: int) -> str | None:
    response = await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")
    state = response.json()["state"]
    return state if state in ("succeeded", "failed", "undone") else None


async def test_a_worker_collects_and_runs_what_the_web_process_accepts(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], shared_database: str, tmp_path: Path
) -> None:
    ferryd = ferryd_factory()
    async with (
        live_app(database_url=shared_database, role="web") as live,
        # Port 0: the worker binds a free port itself and says which (a port chosen here could be taken meanwhile).
        worker_process(shared_database, tmp_path, "--metrics-port", "0") as (worker, worker_id),
    ):
        assert not live.app.state.collector.running, "a web process collects nothing"
        cluster_id, ids = await register(live.client, ferryd)
        events: list[Any] = []
        async with live.app.state.bus.subscribe(cluster_id) as subscription:

            async def healthy() -> bool:
                servers = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()
                return all(s["health"] == "healthy" for s in servers)

            await eventually("the worker's collector to record every server healthy", healthy)
            health = (await live.client.get("/api/v1/health")).json()["collector"]
            assert health["running"] and health["leader_instance_id"] == worker_id, health
            assert health["role"] is None and health["last_cycle_at"] is not None
            cycles = (await live.client.get("/api/v1/collector/cycles")).json()
            assert cycles["instance_id"] == worker_id and cycles["role"] == "leader" and cycles["cycles"], cycles

            started = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/operations/switchover",
                json={"candidate_registered_server_id": ids["replica1"]},
            )
            assert started.status_code == 202, started.text
            operation_id = started.json()["id"]
            assert live.app.state.runner.running == [], "the web process runs no operation"
            state = await eventually(
                "the worker to finish the switchover", lambda: operation_state(live, cluster_id, operation_id)
            )
            operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
            assert state == "succeeded", (operation["error"], operation["steps"])
            assert ferryd.replica1.status()["read_only"] is False, "the candidate is the master now"

            async def relayed() -> bool:
                while not subscription.queue.empty():
                    events.append(subscription.queue.get_nowait())
                return any(
                    isinstance(e.data, OperationEvent) and e.data.operation_id == operation_id
                    and e.data.state == "succeeded" for e in events
                )  # fmt: skip

            await eventually("the worker's operation events to reach the web process's subscribers", relayed)
            assert {"health", "link"} <= {e.type for e in events}, "and the collector's"
        async with httpx.AsyncClient() as scraper:
            metrics = (await scraper.get(f"http://{worker.metrics_address}/metrics")).text  # type: ignore[attr-defined]
        assert 'ferry_control_operation_seconds_count{state="succeeded",type="switchover"} 1.0' in metrics, metrics
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(worker.wait, WAIT_S) == 0


async def test_a_cancel_asked_of_the_web_process_stops_the_workers_operation_at_its_next_sweep(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], live_database_url: str, tmp_path: Path
) -> None:
    """A rebuild the worker runs, throttled to 20 bytes/s (its copy waits its turn for minutes), cancelled through the
    web process: the worker's lease is renewed only every 200 s here, so only its pickup sweep (every 0.5 s) can see
    the cancellation in time — the rebuild ends `cancelled`, its server left marked."""
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(5, domains=(1,))
    ferryd.converge()
    async with (
        live_app(database_url=live_database_url, role="web") as live,
        worker_process(live_database_url, tmp_path, env={"FERRY_OPERATION_LEASE_S": "600"}),
    ):
        cluster_id, ids = await register(live.client, ferryd)
        started = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/operations/rebuild",
            json={"registered_server_id": ids["replica2"], "donor_registered_server_id": ids["replica1"],
                  "throttle_mb_s": 0.00002},
        )  # fmt: skip
        assert started.status_code == 202, started.text
        operation_id = started.json()["id"]

        async def copying() -> bool:
            operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
            return any(s["name"] == "copy" and s["state"] == "running" for s in operation["steps"])

        await eventually("the worker's rebuild to be copying", copying)
        cancel = await live.client.post(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}/cancel")
        assert cancel.status_code == 202, cancel.text
        state = await eventually(
            "the worker to stop the cancelled rebuild", lambda: operation_state(live, cluster_id, operation_id)
        )
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}")).json()
    assert state == "failed" and operation["result"]["failure"]["kind"] == "cancelled", operation["result"]
    assert server["fenced"] is True, "a cancelled rebuild leaves its server marked"
