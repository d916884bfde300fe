"""Collection shared by instances on PostgreSQL: two worker processes (real subprocesses) split two clusters, one
each; SIGKILL of the worker collecting a cluster frees it at once (its lock session ends) and the other worker takes
over its collection and its failover monitor — an automatic failover of that cluster's killed master then still
happens."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from ferry_control.services.collection.share import APPLICATION_NAME, LOCK_CLASS
from ferry_control.services.event_relay import libpq_conninfo
from tests.collection.test_worker import worker_process
from tests.conftest import LiveFactory
from tests.ferryd_cluster import WAIT_S, FerrydCluster
from tests.helpers import register
from tests.mariadb_cluster import eventually

POLL_INTERVAL_S = 0.5
WORKER_SETTINGS = {
    "FERRY_POLL_INTERVAL_S": str(POLL_INTERVAL_S), "FERRY_POLL_TIMEOUT_S": "1", "FERRY_FAILOVER_DETECTION_POLLS": "2",
    "FERRY_UNREACHABLE_AFTER_FAILURES": "2",
}  # fmt: skip


async def collectors(database_url: str) -> dict[int, str]:
    """Per cluster, the instance whose lock session holds it."""
    async with await psycopg.AsyncConnection.connect(libpq_conninfo(database_url), autocommit=True) as connection:
        rows = await (
            await connection.execute(
                "SELECT l.objid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.classid = %s AND l.granted "
                "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                (LOCK_CLASS,),
            )
        ).fetchall()
    return {int(objid): name.removeprefix(APPLICATION_NAME + " ") for objid, name in rows}


async def test_two_workers_split_the_clusters_and_one_takes_over_when_the_other_is_killed(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], live_database_url: str, tmp_path: Path
) -> None:
    first_cluster, second_cluster = ferryd_factory(read_only_replicas=True), ferryd_factory(read_only_replicas=True)
    async with live_app(role="web") as live:
        a_id, _ = await register(live.client, first_cluster, name="a")
        b_id, _ = await register(live.client, second_cluster, name="b", auto_failover=True)
        async with (
            worker_process(live_database_url, tmp_path / "w1", env=WORKER_SETTINGS) as (w1, w1_id),
            worker_process(live_database_url, tmp_path / "w2", env=WORKER_SETTINGS) as (w2, w2_id),
        ):

            async def split() -> dict[int, str] | None:
                held = await collectors(live_database_url)
                return held if set(held) == {a_id, b_id} and set(held.values()) == {w1_id, w2_id} else None

            held = await eventually("each worker to collect one of the two clusters", split)
            b_holder, survivor_id = held[b_id], held[a_id]
            doomed = w1 if b_holder == w1_id else w2

            async def b_healthy() -> bool:
                servers = (await live.client.get(f"/api/v1/clusters/{b_id}/servers")).json()
                return all(s["health"] == "healthy" for s in servers)

            await eventually("cluster b's servers recorded healthy", b_healthy)
            killed_at = time.monotonic()
            doomed.send_signal(signal.SIGKILL)
            await asyncio.to_thread(doomed.wait, WAIT_S)

            async def taken_over() -> bool:
                return (await collectors(live_database_url)).get(b_id) == survivor_id

            await eventually("the surviving worker to take cluster b over", taken_over)
            took_s = time.monotonic() - killed_at
            print(f"cluster b taken over {took_s:.2f} s after the SIGKILL (poll interval {POLL_INTERVAL_S} s)")

            second_cluster.master.kill()

            async def failed_over() -> str | None:
                listed = (await live.client.get(f"/api/v1/clusters/{b_id}/operations")).json()
                failover = next((o for o in listed if o["type"] == "failover"), None)
                return failover["state"] if failover and failover["state"] not in ("pending", "running") else None

            state = await eventually("the surviving worker's monitor to fail cluster b over", failed_over)
            assert state == "succeeded"
            writable = [n.server_id for n in (second_cluster.replica1, second_cluster.replica2)
                        if n.status()["read_only"] is False]  # fmt: skip
            assert len(writable) == 1, "one replica promoted"
