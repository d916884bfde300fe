"""Benchmark: rebuilding a MariaDB 10.11 replica from a donor — the `rebuild` operation through the API
(mariadb-backup streamed over SSH through the control plane into mbstream, then prepared) — its throughput against
the disk's sequential write rate on the same machine, with the master idle and under a write load.

Per size (--sizes, MB of row data in 4 KB rows) and writer rate (--rates, statements per second in all; 0: no
writer), --runs runs on a fresh three-server star (scripts/mariadb_cluster.py, private mariadbd instances) with a
private sshd on loopback (as the tests run it): server 3 rebuilt from server 2 without a throttle. Measured: the
operation's copy step (mariadb-backup's stream into the recipient, its prepare and the server's start: what the
operator waits for before replication starts) and its bytes → MB/s, and the whole operation. Afterwards server 3 must
replicate and reach the master's checksums. Baseline in the same run and directory: `dd` writing as many bytes with
one fdatasync at the end.

Prints one JSON line per run and, last, one JSON object with the medians per size and rate.

    .venv/bin/python backend/bench/rebuild_mariadb.py [--sizes 64,256] [--rates 0,200] [--runs 2]
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
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
from bench.rebuild import disk_rate  # noqa: E402
from cryptography.fernet import Fernet  # noqa: E402

from ferry_control.core.config import Settings  # noqa: E402
from ferry_control.core.db import session_scope  # noqa: E402
from ferry_control.core.migrate import upgrade  # noqa: E402
from ferry_control.core.security import Role  # noqa: E402
from ferry_control.main import create_app  # noqa: E402
from ferry_control.services.tokens import TokenService  # noqa: E402
from tests.mariadb_cluster import MariadbCluster  # noqa: E402
from tests.mariadb_load import MariadbLoadWriter, checksums_equal, register_mariadb  # noqa: E402
from tests.operations.test_rebuild_mariadb import adopt, private_sshd, server_scripts  # noqa: E402

ROW_BYTES = 4000
ROWS_PER_INSERT = 500
PHASE_S = 900.0


@asynccontextmanager
async def control_plane(tmp: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The control plane in-process on SQLite, with an admin token (host access is an admin's)."""
    database_url = f"sqlite+aiosqlite:///{tmp}/control.sqlite3"
    upgrade(database_url)
    settings = Settings(
        environment="development", database_url=database_url, collector_enabled=False,
        drill_scheduler_enabled=False, node_read_retries_max=0, verify_after_rejoin=False,
        secret_keys=Fernet.generate_key().decode(), server_trusted_hosts=["127.0.0.1"],
    )  # fmt: skip
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with session_scope(app.state.sessionmaker) as session:
            _, token = await TokenService(session, settings).create("bench", Role.admin)
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://bench", headers=headers) as client:
            yield client


def fill(cluster: MariadbCluster, megabytes: int) -> None:
    cluster.sql(1, "CREATE TABLE app.blob (id INT PRIMARY KEY, v VARCHAR(4000))")
    rows = megabytes * 1_000_000 // ROW_BYTES
    for start in range(0, rows, ROWS_PER_INSERT):
        values = ",".join(
            f"({i}, REPEAT('x', {ROW_BYTES - 16}))" for i in range(start, min(start + ROWS_PER_INSERT, rows))
        )
        cluster.sql(1, f"INSERT INTO app.blob VALUES {values}")
    cluster.wait_converged()


async def one_run(root: Path, megabytes: int, rate: int) -> dict[str, Any]:
    cluster = MariadbCluster(root / "cluster", 3, die_with_parent=True)
    cluster.start()
    try:
        fill(cluster, megabytes)
        with private_sshd(root / "sshd") as ssh:
            async with control_plane(root) as client:
                cluster_id, ids = await register_mariadb(client, cluster)
                stop, start, pid_file = server_scripts(cluster, 3, ssh.root)
                body = {"user": getpass.getuser(), "port": ssh.port, "private_key": ssh.private_key,
                        "known_hosts": ssh.known_hosts, "stop_command": stop, "start_command": start}  # fmt: skip
                answer = await client.put(f"/api/v1/clusters/{cluster_id}/host-access", json=body)
                assert answer.status_code == 200, answer.text
                writer = await MariadbLoadWriter(cluster, clients=2, domains=2, rate=rate).start() if rate else None
                try:
                    started = time.perf_counter()
                    response = await client.post(
                        f"/api/v1/clusters/{cluster_id}/operations/rebuild",
                        json={"registered_server_id": ids[3], "donor_registered_server_id": ids[2]},
                    )
                    assert response.status_code == 202, response.text
                    operation_id = response.json()["id"]
                    url = f"/api/v1/clusters/{cluster_id}/operations/{operation_id}"
                    deadline = time.monotonic() + PHASE_S
                    while True:
                        operation = (await client.get(url)).json()
                        if operation["state"] not in ("pending", "running"):
                            break
                        if time.monotonic() > deadline:
                            raise SystemExit(f"rebuild {operation_id} still running after {PHASE_S} s")
                        await asyncio.sleep(0.2)  # polling the operation's record, as a client of the API does
                    total_s = time.perf_counter() - started
                finally:
                    adopt(cluster, 3, pid_file)
                    if writer is not None:
                        await writer.stop()
                if operation["state"] != "succeeded":
                    raise SystemExit(f"the rebuild failed: {operation['error']} {operation['steps']}")
                copy = next(s for s in operation["steps"] if s["name"] == "copy")
                copied = operation["result"]["progress"]["bytes_done"]
        cluster.wait_converged()
        await checksums_equal(cluster)
        baseline = disk_rate(root, copied)
        copy_mb_s = copied / 1_000_000 / copy["duration_s"]
        return {
            "size_mb": megabytes, "rate": rate, "copied_mb": round(copied / 1_000_000, 1),
            "copy_s": round(copy["duration_s"], 2), "operation_s": round(total_s, 2), "mb_s": round(copy_mb_s, 1),
            "disk_mb_s": round(baseline, 1), "of_disk": round(copy_mb_s / baseline, 3),
        }  # fmt: skip
    finally:
        cluster.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64,256")
    parser.add_argument("--rates", default="0,200")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        for rate in (int(r) for r in args.rates.split(",")):
            runs = []
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="ferry-rebuild-maria-", dir=os.environ.get("BENCH_DIR")) as d:
                    run = await one_run(Path(d), size, rate)
                print(json.dumps(run), flush=True)
                runs.append(run)
            results[f"{size}MB@{rate}"] = {
                key: statistics.median(r[key] for r in runs) for key in ("mb_s", "disk_mb_s", "of_disk", "copy_s")
            }
    print(json.dumps({"benchmark": "rebuild_mariadb", "results": results}))


if __name__ == "__main__":
    asyncio.run(main())
