"""Benchmarks of operations on the two-master shape on real MariaDB 10.11 (scripts/mariadb_cluster.py, shape seed000:
masters 1 and 2 writing domains 1 and 2, server 3 a multi-source hub over `m1` and `m2`, servers 4 and 5 below it).

    .venv/bin/python backend/bench/mariadb_topologies.py hub-switchover [--switchovers 10] [--rate 200]
    .venv/bin/python backend/bench/mariadb_topologies.py lost-hub [--runs 3]

- `hub-switchover`: the control plane in-process on a throwaway SQLite database, the test suite's load writer with
  each domain's clients on its own master (tests/mariadb_load.py, `masters={1: 1, 2: 2}`), and --switchovers
  switchovers of the hub's role between servers 3 and 5, each a real API call. The masters never stop taking
  writes, so their write-unavailability is measured from the writer itself: refusals (goal 0) and the longest time
  between two acknowledged commits of one client, beside the client's own interval. The hub's replicas' replication
  gap (no running connection to a master) is what each operation reports per moved server.
- `lost-hub`: the collector and failover monitor with the default detection settings (poll_interval_s=1,
  failover_detection_polls=3), automatic failover on, the load writer; SIGKILL of the hub's mariadbd, then the time
  until servers 4 and 5 both replicate from a live server again with the new hub connected to both masters
  (polled every 20 ms). Every acknowledged commit then checked on both. Repeated --runs times.

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
from pathlib import Path
from typing import Any

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

from bench.mariadb_operations import control_plane  # noqa: E402
from bench.measure import quantile  # noqa: E402

from tests.mariadb_cluster import MariadbCluster  # noqa: E402
from tests.mariadb_load import MariadbLoadWriter, load_rows, register_mariadb  # noqa: E402

#: Which servers hold each domain's rows: its master and everything below the hub.
HOLDERS = {1: (1, 3, 4, 5), 2: (2, 3, 4, 5)}


def check_no_loss(cluster: MariadbCluster, writer: MariadbLoadWriter, numbers: tuple[int, ...]) -> int:
    """Every acknowledged increment on each of `numbers` that holds its domain (waiting, bounded, for replication
    to deliver it); raises naming the first that is missing."""
    deadline = time.monotonic() + 60
    for number in numbers:
        while True:
            rows = load_rows(cluster, number)
            missing = [(key, rows.get(key), acked) for key, acked in writer.ledger.acked.items()
                       if number in HOLDERS[int(key[1])] and rows.get(key, -1) < acked]  # fmt: skip
            if not missing:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"server {number} lacks acknowledged increments: {missing[:3]}")
            time.sleep(0.1)
    return sum(writer.ledger.acked.values())


def masters_of(cluster: MariadbCluster, number: int) -> set[int]:
    """The server numbers `number` replicates from over a running, connected connection."""
    by_port = {str(s.port): s.number for s in cluster.servers}
    return {
        by_port.get(c["Master_Port"], 0)
        for c in cluster.replica_status(number)
        if c["Slave_IO_Running"] == "Yes" and c["Slave_SQL_Running"] == "Yes"
    }


async def hub_switchover(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ferry-bench-hub-") as tmp:
        cluster = MariadbCluster(Path(tmp) / "db", 5, shape="seed000", die_with_parent=True)
        cluster.start()
        try:
            async with control_plane(tmp) as (app, client):
                cluster_id, ids = await register_mariadb(client, cluster, name="bench")
                writer = await MariadbLoadWriter(cluster, clients=4, domains=2, rate=args.rate,
                                                 masters={1: 1, 2: 2}).start()  # fmt: skip
                gaps: dict[str, list[float]] = {}
                durations: list[float] = []
                started = time.monotonic()
                try:
                    for i in range(args.switchovers):
                        new = 5 if i % 2 == 0 else 3
                        response = await client.post(f"/api/v1/clusters/{cluster_id}/operations/switchover",
                                                     json={"candidate_registered_server_id": ids[new]})  # fmt: skip
                        operation_id = response.json()["id"]
                        await app.state.runner.wait(operation_id)
                        operation = (
                            await client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")
                        ).json()
                        if operation["state"] != "succeeded":
                            raise SystemExit(f"switchover {i} {operation['state']}: {operation['error']}")
                        reported = operation["result"]["replication_gaps_s"]
                        for server, gap in reported.items():
                            gaps.setdefault(server.split("(")[-1].rstrip(")"), []).append(gap)
                        moves = [s for s in operation["steps"] if s["name"] not in ("preflight", "pre_hooks", "verify")]
                        durations.append(sum(s["duration_s"] for s in moves))
                        print(json.dumps({"switchover": i, "to": f"s{new}", "replication_gaps_s": reported,
                                          "moves_s": round(durations[-1], 4)}), flush=True)  # fmt: skip
                finally:
                    await writer.stop()
                elapsed = time.monotonic() - started
            acked = check_no_loss(cluster, writer, (1, 2, 3, 4, 5))
            version = cluster.value(1, "@@version")
        finally:
            cluster.stop()
    all_gaps = [g for values in gaps.values() for g in values]
    return {
        "benchmark": "mariadb_hub_switchover_under_load",
        "switchovers": len(durations),
        "roots_refused_writes": writer.ledger.refused,
        "roots_unknown_outcome": sum(writer.ledger.unknown.values()),
        "roots_longest_gap_between_acks_s": round(max(writer.ledger.gaps_s), 4),
        "writer_client_interval_s": round(writer.interval_s, 4),
        "replication_gap_s_median": round(statistics.median(all_gaps), 4),
        "replication_gap_s_max": round(max(all_gaps), 4),
        "replication_gap_s_median_by_server": {s: round(statistics.median(v), 4) for s, v in sorted(gaps.items())},
        "moves_s_median": round(statistics.median(durations), 4),
        "moves_s_p90": round(quantile(durations, 0.9), 4),
        "acked_transactions": acked,
        "acked_per_s": round(acked / elapsed, 1),
        "lost_acknowledged": 0,
        "mariadb": version,
    }


async def lost_hub(args: argparse.Namespace) -> dict[str, Any]:
    times: list[float] = []
    version = ""
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ferry-bench-lost-hub-") as tmp:
            cluster = MariadbCluster(Path(tmp) / "db", 5, shape="seed000", die_with_parent=True)
            cluster.start()
            try:
                version = cluster.value(1, "@@version")
                async with control_plane(tmp, collector_enabled=True) as (app, client):
                    cluster_id, ids = await register_mariadb(client, cluster, name="bench", auto_failover=True)
                    writer = await MariadbLoadWriter(cluster, clients=2, domains=2, rate=100.0,
                                                     masters={1: 1, 2: 2}).start()  # fmt: skip
                    try:
                        deadline = time.monotonic() + 60
                        while True:  # the control plane has seen every server healthy
                            servers = (await client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()
                            if all(s["health"] == "healthy" for s in servers):
                                break
                            if time.monotonic() > deadline:
                                raise SystemExit("the collector never saw every server healthy")
                            await asyncio.sleep(0.05)
                        killed = time.monotonic()
                        cluster.kill(3)
                        while True:
                            four = await asyncio.to_thread(masters_of, cluster, 4)
                            five = await asyncio.to_thread(masters_of, cluster, 5)
                            hub = 4 if four == {1, 2} else 5 if five == {1, 2} else None
                            other = 9 - hub if hub else None
                            if hub and other and await asyncio.to_thread(masters_of, cluster, other) == {hub}:
                                break
                            if time.monotonic() - killed > 120:
                                raise SystemExit("the hub's replicas were not re-homed within 120 s")
                            await asyncio.sleep(0.02)
                        rehomed_s = time.monotonic() - killed
                    finally:
                        await writer.stop()
                    check_no_loss(cluster, writer, (1, 2, 4, 5))
                    times.append(rehomed_s)
                    print(json.dumps({"run": run, "sigkill_to_rehomed_s": round(rehomed_s, 3), "new_hub": f"s{hub}",
                                      "acked": sum(writer.ledger.acked.values())}), flush=True)  # fmt: skip
            finally:
                cluster.stop()
    return {
        "benchmark": "mariadb_lost_hub_sigkill_to_rehomed",
        "runs": len(times),
        "sigkill_to_rehomed_s_median": round(statistics.median(times), 3),
        "sigkill_to_rehomed_s_max": round(max(times), 3),
        "detection": {"poll_interval_s": 1.0, "failover_detection_polls": 3},
        "lost_acknowledged": 0,
        "mariadb": version,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("hub-switchover")
    s.add_argument("--switchovers", type=int, default=10)
    s.add_argument("--rate", type=float, default=200.0)
    f = sub.add_parser("lost-hub")
    f.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("FERRY_ENVIRONMENT", "development")
    figures = asyncio.run({"hub-switchover": hub_switchover, "lost-hub": lost_hub}[args.what](args))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
