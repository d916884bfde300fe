"""Benchmark: the day after a failover — how long from "the old master answers again" to "it replicates again".

Per writer rate (--rates, attempts per second in all; 0: no writer) and run (--runs): three ferryd nodes (release
binary unless FERRYD_BIN says otherwise), a master and two read-only replicas, registered with the control plane
in-process on a throwaway SQLite database with the collector and the failover monitor running (--poll-interval,
the control plane's default 1 s) and the cluster's `auto_rejoin` on; the test suite's load writer (`ferry-bench
commit --ledger`, its own process, 4 clients in 2 domains, following the master). Then: the master SIGKILLed, a
failover through the API, and the old master started again on its ports. Measured from the moment it answers
(its process ready), polling its status every 10 ms:

- `fenced_s`: until it is read-only (the monitor fences a fenced master that answers again),
- `replicating_s` (from the same moment): until it replicates from the new master (read-only, its connection running
  to the new master's address) — the rejoin the monitor started, no operator involved,
- `caught_up_s`: until it has the new master's position read at that moment.

With --own N, the old master first takes N transactions (in 2 domains) its replicas never receive (their
connections stopped, as a failover without semi-sync pays): the cluster's `auto_rejoin` is off, and once the old
master is fenced an operator's script asks for the rejoin with `resolve: rewind` at once (the node cuts them,
archived by the control plane first); `replicating_s` then includes that rejoin, and `rejoin_s` is its operation's
own time.

After each run, every acknowledged increment is checked on every node (none lost, none applied twice) and the
rejoined node's checksums equal the new master's at one position (the writer paused for that).

Prints one JSON line per run and, last, one JSON object with the figures per rate.

    .venv/bin/python backend/bench/rejoin.py [--rates 0,200,1000] [--runs 5] [--poll-interval 1.0] [--own N]
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

import httpx  # noqa: E402
from bench.busy_switchover import wait_operation  # noqa: E402
from bench.mariadb_operations import control_plane  # noqa: E402
from bench.measure import quantile  # noqa: E402

from ferry_control.drivers.ferry_protocol import FerryProtocolClient  # noqa: E402
from tests.ferryd_cluster import NODE_TOKEN, REPO_ROOT, FerrydCluster, FerrydNode  # noqa: E402
from tests.helpers import LOAD_FIELD, LOAD_TABLE, LoadWriter, register  # noqa: E402

#: How often the old master's status is read while it rejoins.
PROBE_S = 0.01
#: Bound on each phase (a bound, not an expectation).
PHASE_S = 120.0


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def summary(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "median": None, "p90": None, "min": None, "max": None}
    return {
        "n": len(values),
        "median": round(statistics.median(values), 3),
        "p90": round(quantile(values, 0.9), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


async def until(what: str, check: Any) -> float:
    """Seconds until `check()` (blocking, run in a thread) is true, polled every PROBE_S; bounded by PHASE_S."""
    started = time.monotonic()
    while True:
        try:
            if await asyncio.to_thread(check):
                return time.monotonic() - started
        except (httpx.HTTPError, OSError):
            pass  # the node may refuse a read while it starts: not an answer yet
        if time.monotonic() - started > PHASE_S:
            raise SystemExit(f"{what}: not within {PHASE_S:g} s")
        await asyncio.sleep(PROBE_S)


def replicates_from(node: FerrydNode, master: FerrydNode) -> bool:
    status = node.status()
    return bool(status["read_only"]) and any(
        c["master"] == master.listen and c.get("running") and c.get("io_state") == "connected"
        for c in status["replication"]
    )


async def check_ledger(nodes: list[FerrydNode], ledger: dict[str, Any]) -> int:
    """Every acknowledged increment on every node exactly once (at most the unknown ones more); the count."""
    for node in nodes:
        async with await FerryProtocolClient.connect(node.listen) as connection:
            for key, acked in ledger["acked"].items():
                row = await connection.get(LOAD_TABLE, key)
                have = 0 if row is None else int(row[LOAD_FIELD])
                unknown = ledger["unknown"].get(key, 0)
                if not acked <= have <= acked + unknown:
                    raise SystemExit(f"node {node.server_id} holds {have} of {key}, {acked} acknowledged")
    return sum(ledger["acked"].values())


async def one_run(rate: float, run: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ferry-bench-rejoin-") as tmp:
        ferryd = FerrydCluster(Path(tmp) / "nodes", read_only_replicas=True)
        ferryd.start()
        writer: LoadWriter | None = None
        try:
            async with control_plane(
                tmp, node_token=NODE_TOKEN, collector_enabled=True, poll_interval_s=args.poll_interval,
                server_trusted_hosts=["127.0.0.0/8"],
            ) as (app, client):  # fmt: skip
                cluster_id, ids = await register(client, ferryd, name="bench", auto_rejoin=not args.own)
                old = ferryd.master
                if rate:
                    writer = await LoadWriter.start(ferryd.nodes, clients=4, domains=2, rate=rate)
                    await asyncio.sleep(args.warmup)  # the load settles
                    await writer.pause()
                # Killed with everything replicated but, with --own, what it takes once its replicas stopped.
                await asyncio.to_thread(ferryd.converge)
                if args.own:
                    for replica in (ferryd.replica1, ferryd.replica2):
                        await asyncio.to_thread(replica.post, "/v1/replication/main/stop", {})
                    await asyncio.to_thread(ferryd.write, (args.own + 1) // 2, (1, 2))
                await app.state.collector.run_cycle()  # the topology known before the master is lost
                await asyncio.to_thread(old.kill)
                failover = await wait_operation(app, client, cluster_id, "failover", {})
                if failover["state"] != "succeeded":
                    raise SystemExit(f"failover {failover['state']}: {failover['error']}")
                new_id = failover["result"]["new_master_registered_server_id"]
                new = ferryd.replica1 if new_id == ids["replica1"] else ferryd.replica2
                if writer is not None:
                    await writer.resume()
                    await asyncio.sleep(args.warmup)  # the load goes on on the new master
                await asyncio.to_thread(old.start, same_ports=True)
                answered = time.monotonic()  # it answers from here: every figure is from this moment
                await until("fenced", lambda: old.status()["read_only"])
                fenced_s = time.monotonic() - answered
                rejoin_s = cut = None
                if args.own:
                    # The operator's script: the rejoin with a rewind, as soon as the old master is fenced.
                    asked = time.monotonic()
                    rejoin = await wait_operation(
                        app, client, cluster_id, "rejoin",
                        {"registered_server_id": ids["master"], "resolve": "rewind"},
                    )  # fmt: skip
                    if rejoin["state"] != "succeeded":
                        raise SystemExit(f"rejoin {rejoin['state']}: {rejoin['error']}")
                    rejoin_s = time.monotonic() - asked
                    cut = sum(len(d["gtids"]) for d in rejoin["result"]["rewind"]["cut"])
                    if cut != 2 * ((args.own + 1) // 2):
                        raise SystemExit(f"the rewind cut {cut} transactions, not the {args.own} only it had")
                await until("replicating", lambda: replicates_from(old, new))
                replicating_s = time.monotonic() - answered
                target = await asyncio.to_thread(lambda: new.status()["gtid_binlog_pos"])
                await until(
                    "caught up",
                    lambda: old.post("/v1/wait-for-position", {"position": target, "timeout_ms": 100})["reached"],
                )
                caught_up_s = time.monotonic() - answered
                acked = 0
                if writer is not None:
                    ledger = await writer.stop()
                    writer = None
                    await asyncio.to_thread(lambda: old.wait_for(new.status()["gtid_binlog_pos"]))
                    acked = await check_ledger([old, new], ledger)
                if old.get("/v1/checksums")["tables"] != new.get("/v1/checksums")["tables"]:
                    raise SystemExit("the rejoined node's checksums differ from the new master's")
        finally:
            if writer is not None:
                await writer.stop()
            ferryd.stop()
    record = {
        "rate": rate, "run": run, "fenced_s": round(fenced_s, 3), "replicating_s": round(replicating_s, 3),
        "caught_up_s": round(caught_up_s, 3), "acked": acked,
        "rejoin_s": None if rejoin_s is None else round(rejoin_s, 3), "cut": cut,
    }  # fmt: skip
    emit(record)
    return record


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rates", default="0,200,1000", help="the writer's attempts per second in all, per level")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--poll-interval", type=float, default=1.0, help="the collector's poll interval (s)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before the kill and the start")
    parser.add_argument("--own", type=int, default=0, help="transactions only the old master has (rewound)")
    args = parser.parse_args()
    os.environ.setdefault("FERRYD_BIN", str(REPO_ROOT / "engine" / "target" / "release" / "ferryd"))
    levels = []
    for rate in (float(r) for r in args.rates.split(",")):
        runs = [await one_run(rate, i, args) for i in range(args.runs)]
        levels.append({
            "writer_rate_per_s": rate,
            "fenced_s": summary([r["fenced_s"] for r in runs]),
            "replicating_s": summary([r["replicating_s"] for r in runs]),
            "caught_up_s": summary([r["caught_up_s"] for r in runs]),
            "rejoin_s": summary([r["rejoin_s"] for r in runs if r["rejoin_s"] is not None]),
        })  # fmt: skip
    emit({
        "benchmark": "rejoin_after_failover", "poll_interval_s": args.poll_interval, "runs_per_level": args.runs,
        "only_the_old_master_had": args.own,
        "levels": levels, "ferryd": os.environ["FERRYD_BIN"], "load_average": os.getloadavg(),
    })  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
