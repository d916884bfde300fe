"""Benchmark: rebuilding a ferryd replica from a donor (the clone over the node protocol, through the ferry driver's
`rebuild_from` as the rebuild operation calls it) — its throughput against the disk's sequential write rate on the
same machine, with the donor's source idle and under a write load.

Per size (--sizes, MB of row data) and writer rate (--rates, attempts per second in all; 0: no writer), --runs runs
on three ferryd nodes (release binary unless FERRYD_BIN says otherwise): the master filled with rows of 4 KB, level
everywhere; the second replica (the recipient) stopped and read-only; `rebuild_from` it from the first replica (the
donor) without a throttle, while `ferry-bench commit` (4 clients, its own process) writes to the master at the
rate. Measured: the copy's wall time from the call to its answer (the node verified and installed the copy) and its
bytes → MB/s; then the recipient replicates from the copy's position and must reach the master's checksums (the
writer stopped for that). Baseline, in the same run and directory: `dd` writing as many bytes sequentially with one
fdatasync at the end (the disk's sequential rate) — the ratio says how much of it a rebuild gets.

Prints one JSON line per run and, last, one JSON object with the medians per size and rate.

    FERRYD_BIN=engine/target/release/ferryd .venv/bin/python backend/bench/rebuild.py [--sizes 64,256] \\
        [--rates 0,1000] [--runs 3]
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
from pathlib import Path
from typing import Any

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

from ferry_control.core.config import Settings  # noqa: E402
from ferry_control.drivers.base import CopyProgress, CopyThrottle, RebuildSource  # noqa: E402
from ferry_control.drivers.factory import DriverFactory  # noqa: E402
from ferry_control.drivers.ferry import FerryDriver  # noqa: E402
from ferry_control.drivers.ferry_protocol import FerryProtocolClient, Put  # noqa: E402
from ferry_control.models import ServerKind  # noqa: E402
from tests.ferryd_cluster import NODE_TOKEN, REPO_ROOT, FerrydCluster  # noqa: E402

ROW_BYTES = 4096
#: Rows per transaction while filling (well under the node's 2 MiB transaction bound).
ROWS_PER_TXN = 256
#: Bound on each phase (a bound, not an expectation).
PHASE_S = 600.0


async def fill(address: str, megabytes: int) -> int:
    """Writes `megabytes` MB of 4 KB rows to the master; returns the bytes of row data written."""
    rows = megabytes * 1_000_000 // ROW_BYTES
    payload = "x" * (ROW_BYTES - 16)
    async with await FerryProtocolClient.connect(address) as client:
        for start in range(0, rows, ROWS_PER_TXN):
            ops = [Put("blob", f"k{i:09}", {"v": payload}) for i in range(start, min(start + ROWS_PER_TXN, rows))]
            await client.transact(ops, domain=1)
    return rows * ROW_BYTES


def disk_rate(directory: Path, nbytes: int) -> float:
    """MB/s of one sequential write of `nbytes` with an fdatasync at its end (dd), in `directory`."""
    target = directory / "sequential.dd"
    count = max(1, nbytes // 1_000_000)
    started = time.perf_counter()
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={target}", "bs=1000000", f"count={count}", "conv=fdatasync"],
        check=True, capture_output=True,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    target.unlink()
    return count / seconds


def writer(cluster: FerrydCluster, rate: int) -> subprocess.Popen[bytes] | None:
    if rate <= 0:
        return None
    bench = Path(os.environ.get("FERRY_BENCH_BIN", REPO_ROOT / "engine/target/release/ferry-bench"))
    return subprocess.Popen(
        [str(bench), "commit", "--addr", cluster.master.listen, "--clients", "4", "--rate", str(rate),
         "--seconds", str(int(PHASE_S)), "--table", "load"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


async def one_run(root: Path, megabytes: int, rate: int, node_args: tuple[str, ...] = ()) -> dict[str, Any]:
    cluster = FerrydCluster(root / "nodes", node_args, (), read_only_replicas=True)
    cluster.start()
    factory = DriverFactory(Settings(environment="development", node_token=NODE_TOKEN, collector_enabled=False))
    load = None
    try:
        written = await fill(cluster.master.listen, megabytes)
        cluster.converge()
        cluster.replica2.post("/v1/replication/main/stop", {})
        cluster.replica2.post("/v1/replication/main/reset", {"all": True})
        recipient = factory.for_address(ServerKind.ferry, cluster.replica2.admin)
        donor = factory.for_address(ServerKind.ferry, cluster.replica1.admin)
        assert isinstance(recipient, FerryDriver) and isinstance(donor, FerryDriver)
        load = writer(cluster, rate)
        seen: list[CopyProgress] = []
        started = time.perf_counter()
        async with asyncio.timeout(PHASE_S):
            done = await recipient.rebuild_from(
                RebuildSource(driver=donor), throttle=CopyThrottle(), on_progress=seen.append
            )
        seconds = time.perf_counter() - started
        if load is not None:
            load.terminate()
            load.wait()
            load = None
        cluster.replica2.replicate_from(cluster.master)  # from the copy's position (its gtid_slave_pos)
        cluster.replica2.wait_for(cluster.master.status()["gtid_binlog_pos"])
        equal = cluster.replica2.get("/v1/checksums")["tables"] == cluster.master.get("/v1/checksums")["tables"]
        baseline = disk_rate(root, done.bytes_done or written)
        copied_mb = done.bytes_done / 1_000_000
        return {
            "size_mb": megabytes, "rate": rate, "copied_mb": round(copied_mb, 1), "seconds": round(seconds, 3),
            "mb_s": round(copied_mb / seconds, 1), "disk_mb_s": round(baseline, 1),
            "of_disk": round(copied_mb / seconds / baseline, 3), "progress_reports": len(seen), "equal": equal,
        }  # fmt: skip
    finally:
        if load is not None:
            load.terminate()
            load.wait()
        await factory.aclose()
        cluster.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64,256")
    parser.add_argument("--rates", default="0,1000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunk-kib", type=int, default=None, help="the donors' --clone-chunk-bytes, in KiB")
    args = parser.parse_args()
    os.environ.setdefault("FERRYD_BIN", str(REPO_ROOT / "engine/target/release/ferryd"))
    results: dict[str, Any] = {}
    node_args = ("--clone-chunk-bytes", str(args.chunk_kib * 1024)) if args.chunk_kib else ()
    for size in (int(s) for s in args.sizes.split(",")):
        for rate in (int(r) for r in args.rates.split(",")):
            runs = []
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="ferry-rebuild-bench-", dir=os.environ.get("BENCH_DIR")) as d:
                    run = await one_run(Path(d), size, rate, node_args)
                print(json.dumps(run), flush=True)
                if not run["equal"]:
                    raise SystemExit(f"the rebuilt replica's checksums differ from the master's: {run}")
                runs.append(run)
            results[f"{size}MB@{rate}"] = {
                "mb_s": statistics.median(r["mb_s"] for r in runs),
                "disk_mb_s": statistics.median(r["disk_mb_s"] for r in runs),
                "of_disk": statistics.median(r["of_disk"] for r in runs),
                "seconds": statistics.median(r["seconds"] for r in runs),
            }
    print(json.dumps({"benchmark": "rebuild", "results": results}))


if __name__ == "__main__":
    asyncio.run(main())
