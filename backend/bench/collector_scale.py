"""Benchmark: one API instance's collector polling 100 ferryd nodes every second.

Starts --clusters clusters of --nodes-per-cluster ferryd nodes each (release binary unless FERRYD_BIN says
otherwise; default 10 × 10 = 100), each cluster a master and replicas replicating from it, with `ferry-bench demo`
writing to every master (--rate transactions/s in 2 domains), so positions and lag change every cycle and the
collector stores samples. The control plane runs in this process on a throwaway database (SQLite unless
--database-url) with the collector as `make up` runs it (poll_interval_s=1), for --seconds. Reports each cycle's
duration (poll every server, store what changed: p50/p99/max; the failover monitor runs after each, as in the
app) and this process's CPU (user+system seconds per wall second, i.e. cores) while it ran.
Prints one JSON object per 10 cycles and, last, one JSON object with the figures.

With --simulated N the servers are N simulated ones instead (bench/fleet.py, its own process: clusters of
--nodes-per-cluster, positions moving at --rate), for fleets larger than this machine can run as real nodes. With
--instances K as well (PostgreSQL only), K worker processes (`python -m ferry_control worker`) share the collection
(each cluster polled by one of them) instead of the collector running in this process; their cycles are read from
the `collector_cycles` they store, their CPU from /proc.

    .venv/bin/python backend/bench/collector_scale.py [--clusters 10] [--nodes-per-cluster 10] [--seconds 60]
    .venv/bin/python backend/bench/collector_scale.py --simulated 1000 --nodes-per-cluster 3 [--database-url …]
    .venv/bin/python backend/bench/collector_scale.py --simulated 5000 --nodes-per-cluster 5 --instances 5 \
        --database-url postgresql+psycopg://…
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

import uvloop  # noqa: E402
from bench.fleet import fleet  # noqa: E402
from bench.measure import cpu_s, process_cpu_s, quantile  # noqa: E402
from sqlalchemy import select  # noqa: E402
from sqlalchemy.ext.asyncio import create_async_engine  # noqa: E402

from ferry_control.core.config import Settings  # noqa: E402
from ferry_control.core.db import session_scope  # noqa: E402
from ferry_control.core.migrate import upgrade  # noqa: E402
from ferry_control.main import create_app  # noqa: E402
from ferry_control.models import Cluster, CollectorCycleRow, Server  # noqa: E402
from ferry_control.repositories.clusters import ClusterRepository  # noqa: E402
from tests.ferryd_cluster import NODE_TOKEN, REPO_ROOT, FerrydNode, free_port_pair  # noqa: E402


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--nodes-per-cluster", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=20, help="demo transactions/s per master")
    parser.add_argument("--database-url", default=None, help="default: a throwaway SQLite file")
    parser.add_argument("--simulated", type=int, default=None, help="this many simulated servers (bench/fleet.py)")
    parser.add_argument("--instances", type=int, default=None, help="worker processes sharing the collection")
    args = parser.parse_args()
    if args.instances and not (args.simulated and args.database_url):
        parser.error("--instances needs --simulated and a PostgreSQL --database-url")
    bin_dir = REPO_ROOT / "engine" / "target" / "release"
    os.environ.setdefault("FERRYD_BIN", str(bin_dir / "ferryd"))

    with tempfile.TemporaryDirectory(prefix="ferry-bench-collector-") as tmp:
        database_url = args.database_url or f"sqlite+aiosqlite:///{tmp}/control.sqlite3"
        upgrade(database_url)
        nodes: list[list[FerrydNode]] = []
        demos: list[subprocess.Popen[bytes]] = []
        simulator: subprocess.Popen[str] | None = None
        registered: list[list[tuple[str, str, int, int]]] = []  # per cluster: (name, host, protocol, admin port)
        try:
            server_id = 0
            if args.simulated:
                port, _ = free_port_pair()
                simulator = subprocess.Popen(
                    [sys.executable, str(BACKEND / "bench" / "fleet.py"), "--servers", str(args.simulated),
                     "--per-cluster", str(args.nodes_per_cluster), "--port", str(port), "--rate", str(args.rate)],
                    stdout=subprocess.PIPE, text=True,
                )  # fmt: skip
                assert simulator.stdout is not None and simulator.stdout.readline().startswith("ready")
                by_cluster: dict[int, list[tuple[str, str, int, int]]] = {}
                for s in fleet(args.simulated, args.nodes_per_cluster):
                    by_cluster.setdefault(s.cluster, []).append((f"s{s.server_id}", s.host, port + 1, port))
                registered = list(by_cluster.values())
            for c in range(0 if args.simulated else args.clusters):
                members = []
                for _ in range(args.nodes_per_cluster):
                    server_id += 1
                    node = FerrydNode(Path(tmp) / f"c{c}" / f"n{server_id}", server_id)
                    node.start()
                    members.append(node)
                for replica in members[1:]:
                    replica.replicate_from(members[0])
                nodes.append(members)
                registered.append([(f"n{n.server_id}", "127.0.0.1", n.protocol_port, n.admin_port) for n in members])
                demos.append(
                    subprocess.Popen(
                        [
                            str(bin_dir / "ferry-bench"),
                            "demo",
                            "--addr",
                            members[0].listen,
                            "--rate",
                            str(args.rate),
                            "--domains",
                            "2",
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )  # fmt: skip
                )
            settings = Settings(
                environment="development", database_url=database_url, node_token=NODE_TOKEN, collector_enabled=False,
                drill_scheduler_enabled=False, poll_interval_s=1.0,
            )  # fmt: skip
            app = create_app(settings)
            async with session_scope(app.state.sessionmaker) as session:
                repository = ClusterRepository(session)
                for c, members in enumerate(registered):
                    cluster = await repository.add(Cluster(name=f"bench{c}"))
                    for name, host, protocol_port, admin_port in members:
                        session.add(Server(cluster_id=cluster.id, name=name, host=host, protocol_port=protocol_port,
                                           admin_port=admin_port))  # fmt: skip
            if args.instances:
                await app.state.drivers.aclose()
                print(json.dumps(await shared_by_instances(args, database_url, Path(tmp), len(registered))))
                return
            collector = app.state.collector
            durations: list[float] = []
            failed = 0
            async with app.router.lifespan_context(app):
                await collector.run_cycle()  # first cycle: every link and first sample is new; not counted
                cpu_before, wall_before = cpu_s(), time.monotonic()
                next_start = time.monotonic()
                while time.monotonic() - wall_before < args.seconds:
                    report = await collector.run_cycle()
                    await app.state.monitor.check()  # as run_forever does after each cycle (fencing, failover)
                    durations.append(report.duration_s)
                    failed += report.failed
                    if len(durations) % 10 == 0:
                        print(json.dumps({"cycles": len(durations), "last_cycle_s": round(report.duration_s, 4),
                                          "polled": report.polled}), flush=True)  # fmt: skip
                    next_start += settings.collection.poll_interval_s
                    await asyncio.sleep(max(next_start - time.monotonic(), 0.0))
                cpu_used, wall = cpu_s() - cpu_before, time.monotonic() - wall_before
        finally:
            if simulator is not None:
                simulator.terminate()
                simulator.wait()
            for demo in demos:
                demo.terminate()
            for demo in demos:
                demo.wait()
            for members in nodes:
                for node in members:
                    node.stop()
    print(
        json.dumps(
            {
                "benchmark": "collector_poll_simulated_fleet" if args.simulated else "collector_poll_100_nodes",
                "servers": sum(len(m) for m in registered),
                "clusters": len(registered),
                "poll_interval_s": 1.0,
                "cycles": len(durations),
                "cycle_s_p50": round(statistics.median(durations), 4),
                "cycle_s_p99": round(quantile(durations, 0.99), 4),
                "cycle_s_max": round(max(durations), 4),
                "failed_polls": failed,
                "api_process_cpu_cores": round(cpu_used / wall, 3),
                "api_process_cpu_s_per_cycle": round(cpu_used / max(1, len(durations)), 3),
                "database": "sqlite" if args.database_url is None else "postgresql",
                "demo_rate_per_master": args.rate,
            }
        )
    )


async def shared_by_instances(
    args: argparse.Namespace, database_url: str, tmp: Path, clusters: int
) -> dict[str, object]:
    """K workers collect the registered fleet for `args.seconds` after a warm-up; their stored cycles and CPU."""
    env = {
        **os.environ, "FERRY_DATABASE_URL": database_url, "FERRY_ENVIRONMENT": "development",
        "FERRY_DEV_SECRET_KEY_FILE": str(tmp / "secret.key"), "FERRY_NODE_TOKEN": NODE_TOKEN,
        "FERRY_DRILL_SCHEDULER_ENABLED": "false", "FERRY_POLL_INTERVAL_S": "1",
    }  # fmt: skip
    workers = [
        subprocess.Popen([sys.executable, "-m", "ferry_control", "worker"], cwd=BACKEND, env=env,
                         stdout=subprocess.PIPE, stderr=(tmp / f"worker{i}.log").open("w"), text=True)
        for i in range(args.instances)
    ]  # fmt: skip
    engine = create_async_engine(database_url)
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().startswith("worker ready")
        await asyncio.sleep(15)  # warm-up: the clusters spread, every link and first sample stored (a schedule)
        started_at, cpu_before = datetime.now(UTC), [process_cpu_s(w.pid) for w in workers]
        await asyncio.sleep(args.seconds)  # the measured period
        cpu = [process_cpu_s(w.pid) - before for w, before in zip(workers, cpu_before, strict=True)]
        async with engine.connect() as connection:
            rows = (await connection.execute(
                select(CollectorCycleRow.instance_id, CollectorCycleRow.duration_s, CollectorCycleRow.polled,
                       CollectorCycleRow.failed).where(CollectorCycleRow.finished_at >= started_at)
            )).all()  # fmt: skip
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait()
        await engine.dispose()
    durations = [r.duration_s for r in rows]
    polled: dict[str, int] = {}
    for r in rows:
        polled[r.instance_id] = max(polled.get(r.instance_id, 0), r.polled)
    return {
        "benchmark": "collector_shared_by_instances", "servers": args.simulated, "clusters": clusters,
        "instances": args.instances, "poll_interval_s": 1.0, "cycles": len(rows),
        "cycle_s_p50": round(statistics.median(durations), 4), "cycle_s_p99": round(quantile(durations, 0.99), 4),
        "cycle_s_max": round(max(durations), 4), "failed_polls": sum(r.failed for r in rows),
        "servers_per_instance": sorted(polled.values()),
        "worker_cpu_cores": [round(c / args.seconds, 3) for c in cpu], "database": "postgresql",
    }  # fmt: skip


if __name__ == "__main__":
    uvloop.run(main())  # the collector's loop as the worker runs it
