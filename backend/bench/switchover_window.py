"""Benchmark: the write-unavailability window of a planned switchover under load.

Starts three ferryd nodes (release binary unless FERRYD_BIN says otherwise) — a master and two read-only replicas —
and the control plane in-process on a throwaway database (SQLite unless --database-url), registers them, starts the
test suite's load writer (`ferry-bench commit --ledger` beside that ferryd, its own process: --clients connections
committing in --domains domains at --rate attempts per second in all, following the master), then runs
--switchovers switchovers back and forth between the first two nodes, each a real API call whose operation records
`unavailable_s` (old master read-only → new master writable). Prints one JSON line per switchover and, last, one
JSON object with the figures.

    .venv/bin/python backend/bench/switchover_window.py [--switchovers 20] [--clients 8] [--domains 4] [--rate 1000]
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

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

import httpx  # noqa: E402
from bench.measure import WINDOW_STEPS, quantile  # noqa: E402

from ferry_control.core.config import Settings  # noqa: E402
from ferry_control.core.db import session_scope  # noqa: E402
from ferry_control.core.migrate import upgrade  # noqa: E402
from ferry_control.core.security import Role  # noqa: E402
from ferry_control.main import create_app  # noqa: E402
from ferry_control.services.tokens import TokenService  # noqa: E402
from tests.ferryd_cluster import NODE_TOKEN, REPO_ROOT, FerrydCluster  # noqa: E402
from tests.helpers import LOAD_RATE, LoadWriter, register  # noqa: E402


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--switchovers", type=int, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--domains", type=int, default=4)
    parser.add_argument("--rate", type=float, default=LOAD_RATE, help="the writer's attempts per second in all")
    parser.add_argument("--database-url", default=None, help="default: a throwaway SQLite file")
    args = parser.parse_args()
    os.environ.setdefault("FERRYD_BIN", str(REPO_ROOT / "engine" / "target" / "release" / "ferryd"))

    with tempfile.TemporaryDirectory(prefix="ferry-bench-switchover-") as tmp:
        database_url = args.database_url or f"sqlite+aiosqlite:///{tmp}/control.sqlite3"
        upgrade(database_url)
        settings = Settings(
            environment="development", database_url=database_url, node_token=NODE_TOKEN, collector_enabled=False,
            drill_scheduler_enabled=False, node_read_retries_max=0,
        )  # fmt: skip
        ferryd = FerrydCluster(Path(tmp) / "nodes", read_only_replicas=True)
        ferryd.start()
        app = create_app(settings)
        try:
            async with app.router.lifespan_context(app):
                async with session_scope(app.state.sessionmaker) as session:
                    _, token = await TokenService(session, settings).create("bench", Role.operator)
                transport = httpx.ASGITransport(app=app)
                headers = {"Authorization": f"Bearer {token}"}
                async with httpx.AsyncClient(transport=transport, base_url="http://bench", headers=headers) as client:
                    cluster_id, ids = await register(client, ferryd, name="bench")
                    writer = await LoadWriter.start(
                        ferryd.nodes, clients=args.clients, domains=args.domains, rate=args.rate
                    )
                    windows = []
                    step_times: dict[str, list[float]] = {}
                    started = time.monotonic()
                    try:
                        for i in range(args.switchovers):
                            candidate = ids["replica1"] if i % 2 == 0 else ids["master"]
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
                            result = operation["result"]
                            windows.append(result["unavailable_s"])
                            for step in operation["steps"]:
                                step_times.setdefault(step["name"], []).append(step["duration_s"])
                            print(json.dumps({"switchover": i, "unavailable_s": result["unavailable_s"],
                                              "catch_up_s": result["catch_up_s"]}), flush=True)  # fmt: skip
                    finally:
                        summary = await writer.stop()
                    elapsed = time.monotonic() - started
        finally:
            ferryd.stop()
    acked = sum(summary["acked"].values())
    print(
        json.dumps(
            {
                "benchmark": "switchover_unavailability_under_load",
                "switchovers": len(windows),
                "unavailable_s_median": round(statistics.median(windows), 4),
                "unavailable_s_p90": round(quantile(windows, 0.9), 4),
                "unavailable_s_min": round(min(windows), 4),
                "unavailable_s_max": round(max(windows), 4),
                "step_median_s": {
                    name: round(statistics.median(times), 4)
                    for name, times in step_times.items()
                    if name in WINDOW_STEPS
                },
                "writer_clients": args.clients,
                "writer_rate_per_s": args.rate,
                "domains": args.domains,
                "acked_transactions": acked,
                "acked_per_s": round(acked / elapsed, 1),
                "refused_read_only": summary["refused"],
                "unknown_outcome": sum(summary["unknown"].values()),
                "database": "sqlite" if args.database_url is None else "postgresql",
                "ferryd": os.environ["FERRYD_BIN"],
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
