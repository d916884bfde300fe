"""Benchmarks of the control plane on real MariaDB 10.11 servers (scripts/mariadb_cluster.py; Debian's mariadbd).

    .venv/bin/python backend/bench/mariadb_operations.py switchover [--switchovers 20] [--clients 4] [--rate 400]
    .venv/bin/python backend/bench/mariadb_operations.py failover [--runs 3] [--delayed-replica 3600]
    .venv/bin/python backend/bench/mariadb_operations.py collector [--servers 10] [--seconds 60]

- `switchover`: three servers (server 1 the master), the control plane in-process on a throwaway SQLite database,
  the test suite's MariaDB load writer (tests/mariadb_load.py: --clients connections in 2 GTID domains, --rate
  attempts per second in all, following the writable master) and --switchovers switchovers back and forth between
  servers 1 and 2, each a real API call whose operation stores `unavailable_s` (old master read-only → new master
  writable). Afterwards: every acknowledged increment on every server (zero loss), checksums equal.
- `failover`: three servers with semi-sync (AFTER_SYNC) and durable settings, the collector and failover monitor
  with the default detection settings (poll_interval_s=1, failover_detection_polls=3), the load writer; SIGKILL of
  the master's mariadbd, then the time until a new master is writable (read_only off, no replication), measured by
  polling the survivors every 10 ms; each acknowledged commit checked on the new master. Repeated --runs times.
  With --delayed-replica N, a fourth server replicates with MASTER_DELAY=N: a failover never waits for it.
- `collector`: --servers servers (one master, the rest its replicas), a writer at 50 commits/s in 2 domains, the
  collector cycle (poll every server, store what changed, then the failover monitor) every second for --seconds:
  cycle p50/p99/max and this process's CPU (cores).

Each prints one JSON line per run and, last, one JSON object with its figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

import httpx  # noqa: E402
from bench.measure import WINDOW_STEPS, cpu_s, quantile  # noqa: E402
from cryptography.fernet import Fernet  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from ferry_control.core.config import Settings  # noqa: E402
from ferry_control.core.db import session_scope  # noqa: E402
from ferry_control.core.migrate import upgrade  # noqa: E402
from ferry_control.core.security import Role  # noqa: E402
from ferry_control.main import create_app  # noqa: E402
from ferry_control.services.tokens import TokenService  # noqa: E402
from tests.mariadb_cluster import MariadbCluster, driver  # noqa: E402
from tests.mariadb_load import MariadbLoadWriter, load_rows, register_mariadb  # noqa: E402


@asynccontextmanager
async def control_plane(tmp: str, **overrides: Any) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    database_url = f"sqlite+aiosqlite:///{tmp}/control.sqlite3"
    upgrade(database_url)
    settings = Settings(
        **{
            "environment": "development", "database_url": database_url, "collector_enabled": False,
            "drill_scheduler_enabled": False, "node_read_retries_max": 0,
            "secret_keys": Fernet.generate_key().decode(), **overrides,
        }
    )  # fmt: skip
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with session_scope(app.state.sessionmaker) as session:
            _, token = await TokenService(session, settings).create("bench", Role.operator)
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", headers=headers) as client:
            yield app, client


def check_no_loss(cluster: MariadbCluster, writer: MariadbLoadWriter, numbers: list[int]) -> int:
    """Servers whose rows miss an acknowledged increment (raises); returns the acknowledged count."""
    for number in numbers:
        rows = load_rows(cluster, number)
        for key, acked in writer.ledger.acked.items():
            if rows[key] < acked:
                raise SystemExit(f"server {number} lost acknowledged increments of {key}: {rows[key]} < {acked}")
    return sum(writer.ledger.acked.values())


async def switchover(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ferry-bench-mariadb-") as tmp:
        cluster = MariadbCluster(Path(tmp) / "db", 3, die_with_parent=True)
        cluster.start()
        try:
            async with control_plane(tmp) as (app, client):
                cluster_id, ids = await register_mariadb(client, cluster, name="bench")
                writer = await MariadbLoadWriter(cluster, clients=args.clients, domains=2, rate=args.rate).start()
                windows: list[float] = []
                step_times: dict[str, list[float]] = {}
                started = time.monotonic()
                try:
                    for i in range(args.switchovers):
                        candidate = ids[2] if i % 2 == 0 else ids[1]
                        response = await client.post(
                            f"/api/v1/clusters/{cluster_id}/operations/switchover",
                            json={"candidate_registered_server_id": candidate},
                        )
                        operation_id = response.json()["id"]
                        await app.state.runner.wait(operation_id)
                        operation = (
                            await client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")
                        ).json()
                        if operation["state"] != "succeeded":
                            raise SystemExit(f"switchover {i} {operation['state']}: {operation['error']}")
                        windows.append(operation["result"]["unavailable_s"])
                        for step in operation["steps"]:
                            step_times.setdefault(step["name"], []).append(step["duration_s"])
                        print(json.dumps({"switchover": i, "unavailable_s": windows[-1],
                                          "catch_up_s": operation["result"]["catch_up_s"]}), flush=True)  # fmt: skip
                finally:
                    await writer.stop()
                elapsed = time.monotonic() - started
            cluster.wait_converged()
            acked = check_no_loss(cluster, writer, [1, 2, 3])
            drivers = [driver(cluster, n) for n in (1, 2, 3)]
            sums = [await d.checksums() for d in drivers]
            for d in drivers:
                await d.aclose()
            if any(dict(s.tables) != dict(sums[0].tables) for s in sums):
                raise SystemExit("checksums differ after the switchovers")
            version = cluster.value(1, "@@version")
        finally:
            cluster.stop()
    return {
        "benchmark": "mariadb_switchover_unavailability_under_load",
        "switchovers": len(windows),
        "unavailable_s_median": round(statistics.median(windows), 4),
        "unavailable_s_p90": round(quantile(windows, 0.9), 4),
        "unavailable_s_min": round(min(windows), 4),
        "unavailable_s_max": round(max(windows), 4),
        "step_median_s": {n: round(statistics.median(t), 4) for n, t in step_times.items() if n in WINDOW_STEPS},
        "writer_clients": args.clients,
        "writer_rate_per_s": args.rate,
        "domains": 2,
        "acked_transactions": acked,
        "acked_per_s": round(acked / elapsed, 1),
        "refused_read_only": writer.ledger.refused,
        "unknown_outcome": sum(writer.ledger.unknown.values()),
        "lost_acknowledged": 0,
        "checksums_equal": True,
        "mariadb": version,
    }


async def failover(args: argparse.Namespace) -> dict[str, Any]:
    times: list[float] = []
    step_times: list[dict[str, float]] = []
    lost_total = 0
    version = ""
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ferry-bench-mariadb-failover-") as tmp:
            cluster = MariadbCluster(
                Path(tmp) / "db", 4 if args.delayed_replica else 3, semi_sync=True, durable=True,
                die_with_parent=True, extra_args=[f"--slave-parallel-threads={args.parallel_threads}"],
            )  # fmt: skip
            cluster.start()
            try:
                if args.delayed_replica:  # a disaster-recovery copy an hour behind: never waited for, never promoted
                    cluster.sql(4, f"STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = {args.delayed_replica}; START SLAVE;")
                version = cluster.value(1, "@@version")
                # The default detection settings, with the collector on as deployed.
                async with control_plane(tmp, collector_enabled=True) as (app, client):
                    cluster_id, ids = await register_mariadb(client, cluster, name="bench", auto_failover=True)
                    writer = await MariadbLoadWriter(cluster, clients=4, domains=2, rate=200.0).start()
                    try:
                        deadline = time.monotonic() + 60
                        while True:  # the control plane has seen the master healthy and writing
                            server = (await client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[1]}")).json()
                            if server["health"] == "healthy" and "2-" in (server["gtid_binlog_pos"] or ""):
                                break
                            if time.monotonic() > deadline:
                                raise SystemExit("the collector never saw the master writing")
                            await asyncio.sleep(0.05)
                        killed = time.monotonic()
                        cluster.kill(1)
                        new = None
                        while new is None:
                            for number in (2, 3):
                                status = await asyncio.to_thread(cluster.replica_status, number)
                                if not status and await asyncio.to_thread(cluster.value, number, "@@read_only") == "0":
                                    new = number
                            if time.monotonic() - killed > 120:
                                raise SystemExit("no writable new master within 120 s")
                            await asyncio.sleep(0.01)
                        writable_s = time.monotonic() - killed
                        await writer.pause()
                        listed = (await client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
                        failover_op = next(o for o in listed if o["type"] == "failover")
                        await app.state.runner.wait(failover_op["id"])
                        failover_op = (
                            await client.get(f"/api/v1/clusters/{cluster_id}/operations/{failover_op['id']}")
                        ).json()
                        steps = {st["name"]: st["duration_s"] for st in failover_op["steps"]}
                    finally:
                        await writer.stop()
                    lost = 0
                    rows = load_rows(cluster, new)
                    for key, acked in writer.ledger.acked.items():
                        lost += max(0, acked - rows[key])
                    lost_total += lost
                    times.append(writable_s)
                    step_times.append(steps)
                    print(json.dumps({"run": run, "sigkill_to_writable_s": round(writable_s, 3), "new_master": new,
                                      "acked": sum(writer.ledger.acked.values()), "lost_acknowledged": lost,
                                      "failover_steps_s": steps}), flush=True)  # fmt: skip
            finally:
                cluster.stop()
    return {
        "benchmark": "mariadb_failover_sigkill_to_writable",
        "runs": len(times),
        "sigkill_to_writable_s_median": round(statistics.median(times), 3),
        "sigkill_to_writable_s_max": round(max(times), 3),
        "detection": {"poll_interval_s": 1.0, "failover_detection_polls": 3},
        "semi_sync": "AFTER_SYNC, timeout 10 s",
        "failover_step_median_s": {
            name: round(statistics.median(t[name] for t in step_times), 3) for name in step_times[0]
        },
        "replica_parallel_threads": args.parallel_threads,
        "delayed_replica_s": args.delayed_replica,
        "lost_acknowledged": lost_total,
        "mariadb": version,
    }


async def collector(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ferry-bench-mariadb-collector-") as tmp:
        cluster = MariadbCluster(Path(tmp) / "db", args.servers, die_with_parent=True)
        cluster.start()
        try:
            async with control_plane(tmp, poll_interval_s=1.0) as (app, client):
                await register_mariadb(client, cluster, name="bench")
                writer = await MariadbLoadWriter(cluster, clients=2, domains=2, rate=50.0).start()
                collector_ = app.state.collector
                durations: list[float] = []
                failed = 0
                try:
                    await collector_.run_cycle()  # first cycle: every link and sample is new; not counted
                    cpu_before, wall_before = cpu_s(), time.monotonic()
                    next_start = time.monotonic()
                    while time.monotonic() - wall_before < args.seconds:
                        report = await collector_.run_cycle()
                        await app.state.monitor.check()
                        durations.append(report.duration_s)
                        failed += report.failed
                        if len(durations) % 10 == 0:
                            print(json.dumps({"cycles": len(durations), "last_cycle_s": round(report.duration_s, 4),
                                              "polled": report.polled}), flush=True)  # fmt: skip
                        next_start += 1.0
                        await asyncio.sleep(max(next_start - time.monotonic(), 0.0))
                    cpu_used, wall = cpu_s() - cpu_before, time.monotonic() - wall_before
                finally:
                    await writer.stop()
            version = cluster.value(1, "@@version")
        finally:
            cluster.stop()
    return {
        "benchmark": "mariadb_collector_cycle",
        "servers": args.servers,
        "poll_interval_s": 1.0,
        "cycles": len(durations),
        "cycle_s_p50": round(statistics.median(durations), 4),
        "cycle_s_p99": round(quantile(durations, 0.99), 4),
        "cycle_s_max": round(max(durations), 4),
        "failed_polls": failed,
        "api_process_cpu_cores": round(cpu_used / wall, 3),
        "note": "the process also runs the load writer (2 clients, 50 commits/s)",
        "database": "sqlite",
        "mariadb": version,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("switchover")
    s.add_argument("--switchovers", type=int, default=20)
    s.add_argument("--clients", type=int, default=4)
    s.add_argument("--rate", type=float, default=400.0)
    f = sub.add_parser("failover")
    f.add_argument("--runs", type=int, default=3)
    f.add_argument("--parallel-threads", type=int, default=4, help="the replicas' slave_parallel_threads")
    f.add_argument("--delayed-replica", type=int, default=0, metavar="SECONDS",
                   help="a fourth server replicating with this MASTER_DELAY (0: none)")  # fmt: skip
    c = sub.add_parser("collector")
    c.add_argument("--servers", type=int, default=10)
    c.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    os.environ.setdefault("FERRY_ENVIRONMENT", "development")
    figures = asyncio.run({"switchover": switchover, "failover": failover, "collector": collector}[args.what](args))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
