"""Benchmark: switchovers on a busy cluster — Ferry's switchover against a careful hand sequence, at rising write load.

`mariadb`: per load level (a ledger writer at --levels clients, as fast as the master answers, in two GTID domains)
a fresh three-server MariaDB 10.11 cluster with durable servers (sync_binlog=1, innodb_flush_log_at_trx_commit=1)
and single-threaded replicas (slave_parallel_threads=0), registered with an in-process control plane (SQLite). The
writer runs in its own process (tests/mariadb_load.py's MariadbLoadWriter; a client with no writable server looks
again every 50 ms, as an application's pool would). After a warm-up the master's commit rate and each replica's
apply rate are measured (`keep_up`); where a replica falls behind, the cluster's `catch_up_parallel_workers` is set
for Ferry (else the defaults). One Ferry switchover (not counted) puts servers 1 and 2 in turn; then --switchovers
of each, interleaved in pairs (hand–Ferry, Ferry–hand, …), back and forth between servers 1 and 2 (server 3 stays a
single-threaded replica throughout: its apply rate over the level is the single-threaded rate under that load),
each started --gap seconds after the previous one's old master began replicating, so every candidate has trailed
for about as long:

- the hand sequence, over SQL as the cluster's admin login (connections opened and the connection names and the
  users that bypass read_only read beforehand): old master `SET GLOBAL read_only=1`, end the sessions that bypass
  it (none here), read `@@gtid_binlog_pos` P, candidate `SELECT MASTER_GTID_WAIT(P, 60)` (a timeout: read_only=0
  on the old master, counted failed), `STOP ALL SLAVES; RESET SLAVE '<c>' ALL; SET GLOBAL read_only=0`; then the
  third server repointed (`MASTER_USE_GTID=slave_pos`) and the old master demoted (`MASTER_DEMOTE_TO_SLAVE=1`).
  Its window: read_only=1 issued → read_only=0 returned on the candidate, on the same clock Ferry's uses;
- Ferry's switchover through the API (candidate named), recording `unavailable_s`, `window_steps` and the
  catch-up phase.

After each level the writer stops, every server converges (parallel apply raised by root for that only), and every
acknowledged increment is checked on every server (none lost, none applied twice), with equal checksums and no
errant GTID.

`ferryd`: the same levels on three ferryd nodes (durability local, serial apply on the replicas) with `ferry-bench
commit --ledger` as the writer: Ferry's switchovers only (there is no hand sequence for ferryd), with the same
keep-up rule for `catch_up_parallel_workers`.

Prints one JSON line per measurement and switchover and, last, one JSON object with the figures per level.

    .venv/bin/python backend/bench/busy_switchover.py mariadb [--levels 1,2,4,8,16] [--switchovers 10] [--gap 5]
    .venv/bin/python backend/bench/busy_switchover.py ferryd [--levels 1,2,4,8,16] [--switchovers 10] [--gap 5]
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
import warnings
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

import aiomysql  # noqa: E402
import httpx  # noqa: E402
import pymysql  # noqa: E402
from bench.mariadb_operations import control_plane  # noqa: E402
from bench.measure import WINDOW_STEPS  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from ferry_control.core.gtid import seq_by_domain  # noqa: E402
from tests.ferryd_cluster import NODE_TOKEN, FerrydCluster, FerrydNode, protocol  # noqa: E402
from tests.mariadb_cluster import MariadbCluster  # noqa: E402
from tests.mariadb_hand import Sql, bypassing_users, hand_switchover, master_of  # noqa: E402
from tests.mariadb_load import LOAD_TABLE, MariadbLoadWriter, errant_everywhere, load_rows, register_mariadb  # noqa: E402

#: The writer's GTID domains.
DOMAINS = (1, 2)
#: A replica keeps up when what it lacks grows by no more than this share of the master's commit rate (and this many
#: transactions a second): a single-threaded replica that falls behind grows its backlog by a large share.
KEEP_UP_SHARE = 0.02
KEEP_UP_SLACK_PER_S = 5.0
#: Between two readings of the keep-up measurement.
KEEP_UP_SAMPLE_S = 0.5
#: Bound on an operation, and on the convergence after a level.
OPERATION_WAIT_S = 600.0
CONVERGE_S = 1800.0
#: The servers' addresses: trusted, so what the benchmark registers is approved.
LOOPBACK = ["127.0.0.0/8"]
#: Seconds between a writer client's looks for a writable server when it has none.
WRITER_RETRY_S = 0.05


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


def summary(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {
        "n": len(values),
        "median": round(statistics.median(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def total(position: str | None, domains: Sequence[int] = DOMAINS) -> int:
    """The sum of the seq_nos of `domains` in a GTID position (transactions committed there, when seq_nos count)."""
    seqs = seq_by_domain(position or "")
    return sum(seqs.get(d, 0) for d in domains)


def load_now() -> dict[str, Any]:
    return {"load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}


# -- the writer, in its own process ----------------------------------------------------------------------------


class PatientWriter(MariadbLoadWriter):
    """The tests' writer, looking for the writable server every WRITER_RETRY_S while there is none (the tests'
    looks every 10 ms: at 16 clients that is thousands of logins a second against the servers whose catch-up is
    measured, which no application pool does)."""

    async def _connect_master(self, domain: int | None = None) -> aiomysql.Connection:
        deadline = time.monotonic() + 120.0
        while True:
            for server in self.cluster.servers:
                try:
                    conn = await self._connect(server.port)
                except (pymysql.err.MySQLError, OSError):
                    continue
                async with conn.cursor() as cur:
                    await cur.execute("SELECT @@read_only")
                    (read_only,) = await cur.fetchone()
                if not read_only:
                    if self._master_port is not None and self._master_port != server.port:
                        self.ledger.master_changes += 1
                    self._master_port = server.port
                    return conn
                conn.close()
            if time.monotonic() > deadline:
                raise AssertionError("the load writer found no writable master for 120 s")
            await asyncio.sleep(WRITER_RETRY_S)


async def writer_process(config: str) -> None:
    """The `writer` subcommand: a PatientWriter over the servers in `config` (JSON: ports, workload login, clients);
    stdin commands `count` (acknowledged so far) and `stop` (the ledger, then exit)."""
    c = json.loads(config)
    servers = [SimpleNamespace(number=i + 1, port=p) for i, p in enumerate(c["ports"])]
    cluster = SimpleNamespace(
        servers=servers,
        server=lambda n: servers[n - 1],
        users=SimpleNamespace(workload=SimpleNamespace(name=c["user"], password=c["password"])),
    )
    writer = await PatientWriter(cluster, clients=c["clients"], domains=len(DOMAINS), rate=1e9).start()
    print(json.dumps({"started": True}), flush=True)
    while True:
        line = (await asyncio.to_thread(sys.stdin.readline)).strip()
        if line == "count":
            print(json.dumps({"acked": sum(writer.ledger.acked.values())}), flush=True)
        elif line in ("stop", ""):  # "" : the parent's end of stdin closed
            ledger = await writer.stop()
            print(json.dumps({"acked": ledger.acked, "unknown": ledger.unknown, "refused": ledger.refused,
                              "master_changes": ledger.master_changes}), flush=True)  # fmt: skip
            return


class WriterProcess:
    """The parent's handle on the `writer` subcommand's process (stopped by its pid)."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process

    @classmethod
    async def start(cls, cluster: MariadbCluster, clients: int) -> WriterProcess:
        config = {
            "ports": [s.port for s in cluster.servers],
            "user": cluster.users.workload.name,
            "password": cluster.users.workload.password,
            "clients": clients,
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "writer", "--config", json.dumps(config),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=64 * 1024 * 1024,
        )  # fmt: skip
        writer = cls(process)
        await writer._read()
        return writer

    async def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        async with asyncio.timeout(120):
            line = await self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the writer process ended (exit {await self.process.wait()})")
        return dict(json.loads(line))

    async def command(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command.encode() + b"\n")
        await self.process.stdin.drain()
        return await self._read()

    async def stop(self) -> dict[str, Any]:
        ledger = await self.command("stop")
        async with asyncio.timeout(60):
            await self.process.wait()
        return ledger

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


# -- MariaDB: SQL over the admin login --------------------------------------------------------------------------


async def mariadb_positions(sql: dict[int, Sql], master: int) -> tuple[float, dict[int, int]]:
    """At one moment: the master's binlog total and each replica's applied total (gtid_slave_pos) in DOMAINS."""

    async def read(n: int) -> tuple[int, int]:
        what = "@@gtid_binlog_pos" if n == master else "@@gtid_slave_pos"
        return n, total(str(await sql[n].value(f"SELECT {what}") or ""))

    at = time.monotonic()
    found = dict(await asyncio.gather(*(read(n) for n in sql)))
    return at, found


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


async def keep_up(
    read: Callable[[], Awaitable[tuple[float, dict[Any, int]]]], master: Any, seconds: float
) -> dict[str, Any]:
    """The master's commit rate and each replica's apply rate over `seconds` (least-squares slopes of readings every
    KEEP_UP_SAMPLE_S, so that one reading taken a moment after another does not decide), and whether each keeps up:
    what it lacks grows by at most KEEP_UP_SHARE of the commit rate (and KEEP_UP_SLACK_PER_S)."""
    samples = []
    started = time.monotonic()
    while True:
        samples.append(await read())
        if time.monotonic() - started >= seconds:
            break
        await asyncio.sleep(KEEP_UP_SAMPLE_S)
    commit_rate = slope([(at, found[master]) for at, found in samples])
    replicas = {}
    for r in samples[0][1]:
        if r == master:
            continue
        growth = slope([(at, found[master] - found[r]) for at, found in samples])
        replicas[str(r)] = {
            "apply_per_s": round(slope([(at, found[r]) for at, found in samples]), 1),
            "falls_behind_per_s": round(growth, 1),
            "behind_at_start": samples[0][1][master] - samples[0][1][r],
            "behind_at_end": samples[-1][1][master] - samples[-1][1][r],
            "keeps_up": growth <= max(KEEP_UP_SLACK_PER_S, KEEP_UP_SHARE * commit_rate),
        }
    return {
        "seconds": round(samples[-1][0] - samples[0][0], 2),
        "master_commits_per_s": round(commit_rate, 1),
        "replicas": replicas,
        "all_keep_up": all(r["keeps_up"] for r in replicas.values()),
    }


async def wait_operation(app: FastAPI, client: httpx.AsyncClient, cluster_id: int, kind: str,
                         body: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    response = await client.post(f"/api/v1/clusters/{cluster_id}/operations/{kind}", json=body)
    if response.status_code != 202:
        raise SystemExit(f"{kind} refused: {response.status_code} {response.text}")
    operation_id = response.json()["id"]
    async with asyncio.timeout(OPERATION_WAIT_S):
        await app.state.runner.wait(operation_id)
    return dict((await client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json())


async def ferry_switchover(
    app: FastAPI, client: httpx.AsyncClient, cluster_id: int, candidate_id: int
) -> dict[str, Any]:
    started = time.perf_counter()
    operation = await wait_operation(
        app, client, cluster_id, "switchover", {"candidate_registered_server_id": candidate_id}
    )
    took = time.perf_counter() - started
    result = operation["result"] or {}
    phase = result.get("catch_up_phase") or {}
    record: dict[str, Any] = {
        "ok": operation["state"] == "succeeded",
        "operation_s": round(took, 3),
        "steps": [s["name"] for s in operation["steps"]],
        "waited_s": phase.get("waited_s"),
        "rates": phase.get("rates"),
        "predicted_catch_up_s": phase.get("predicted_catch_up_s"),
        "behind_at_read_only": phase.get("behind"),
        "went_on": next((s["detail"].get("went_on") for s in operation["steps"]
                         if s["name"] == "catch_up_before_window" and isinstance(s["detail"], dict)), None),
    }  # fmt: skip
    if not record["ok"]:
        record["error"] = operation["error"]
        return record
    record["window_s"] = result["unavailable_s"]
    record["window_steps_s"] = result["window_steps"]
    demoted = next((s for s in operation["steps"] if s["name"] == "old_master_replicates"), None)
    finished = demoted["finished_at"] if demoted else operation["steps"][-1]["finished_at"]
    record["demoted_at"] = datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp()
    return record


def verify_mariadb(cluster: MariadbCluster, ledger: dict[str, Any], master: int) -> dict[str, Any]:
    """After the load: every server converged to the master, every acknowledged increment on every server (at most
    the unknown outcomes more), equal checksums, no errant GTID."""
    numbers = [s.number for s in cluster.servers]
    for n in numbers:
        if n != master:  # for the convergence only: single-threaded replicas may be far behind
            cluster.sql(n, "STOP ALL SLAVES; SET GLOBAL slave_parallel_threads = 8; START ALL SLAVES;")
    deadline = time.monotonic() + CONVERGE_S
    started = time.monotonic()
    while True:
        want = seq_by_domain(cluster.value(master, "@@gtid_binlog_pos"))
        behind = {}
        for n in numbers:
            have = seq_by_domain(cluster.value(n, "@@gtid_current_pos"))
            behind[n] = sum(max(0, s - have.get(d, 0)) for d, s in want.items())
        if not any(behind.values()):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"servers did not converge within {CONVERGE_S} s: behind {behind}")
        time.sleep(0.5)
    converge_s = time.monotonic() - started
    acked, unknown = ledger["acked"], ledger["unknown"]
    lost = extra = 0
    for n in numbers:
        rows = load_rows(cluster, n)
        for key, count in acked.items():
            lost += max(0, count - rows.get(key, 0))
            extra += max(0, rows.get(key, 0) - count - unknown.get(key, 0))
    sums = {n: cluster.sql(n, f"CHECKSUM TABLE {LOAD_TABLE}")[0][1] for n in numbers}
    errant = errant_everywhere(cluster, master)
    for n in numbers:
        if n != master:
            cluster.sql(n, "STOP ALL SLAVES; SET GLOBAL slave_parallel_threads = 0; START ALL SLAVES;")
    check = {
        "converge_s": round(converge_s, 1),
        "acked": sum(acked.values()),
        "unknown_outcome": sum(unknown.values()),
        "lost_acknowledged": lost,
        "applied_beyond_attempts": extra,
        "checksums_equal": len(set(sums.values())) == 1,
        "errant": errant,
    }
    if lost or extra or not check["checksums_equal"] or errant:
        emit({"verify_failed": check})
        raise SystemExit(f"verification failed: {check}")
    return check


def shares(windows: list[dict[str, float]], keys: Sequence[str]) -> dict[str, Any]:
    """Per step: its median seconds and its median share of the window."""
    found = {}
    for key in keys:
        seconds = [w.get(key, 0.0) for w in windows]
        fractions = [w.get(key, 0.0) / sum(w.values()) for w in windows if sum(w.values()) > 0]
        if seconds:
            found[key] = {
                "median_s": round(statistics.median(seconds), 4),
                "median_share": round(statistics.median(fractions), 3) if fractions else None,
            }
    return found


async def mariadb_level(clients: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ferry-bench-busy-") as tmp:
        cluster = MariadbCluster(Path(tmp) / "db", 3, durable=True, die_with_parent=True)
        cluster.start()
        writer: WriterProcess | None = None
        sql: dict[int, Sql] = {}
        try:
            version = cluster.value(1, "@@version")
            bypassing = bypassing_users(cluster)
            async with control_plane(tmp, server_trusted_hosts=LOOPBACK) as (app, client):
                cluster_id, ids = await register_mariadb(client, cluster, name="bench")
                sql = {n: await Sql.open(cluster, n) for n in (1, 2, 3)}
                writer = await WriterProcess.start(cluster, clients)
                await asyncio.sleep(args.warmup)  # the load settles (connections made, buffer pool warm)
                measured = await keep_up(lambda: mariadb_positions(sql, 1), 1, args.measure)
                parallel = 0 if measured["all_keep_up"] else args.parallel_workers
                emit(
                    {"kind": "mariadb", "clients": clients, "keep_up": measured, "catch_up_parallel_workers": parallel}
                )
                if parallel:
                    patched = await client.patch(f"/api/v1/clusters/{cluster_id}",
                                                 json={"catch_up_parallel_workers": parallel})  # fmt: skip
                    if patched.status_code != 200:
                        raise SystemExit(f"PATCH catch_up_parallel_workers: {patched.text}")
                # Levelling (not counted): server 2 has trailed since the start; once s1 and s2 take turns, each
                # candidate has trailed since its own demotion, --gap seconds before its move.
                levelling = await ferry_switchover(app, client, cluster_id, ids[2])
                emit({"clients": clients, "levelling_switchover": levelling})
                demoted_at = levelling.pop("demoted_at", time.time())
                level_t0, level_first = await mariadb_positions(sql, await master_of(sql))
                acked_t0 = (await writer.command("count"))["acked"]
                records: dict[str, list[dict[str, Any]]] = {"hand": [], "ferry": []}
                for i in range(2 * args.switchovers):
                    # Pairs hand-Ferry, then Ferry-hand: each kind promotes server 1 as often as server 2.
                    kind = ("hand", "ferry")[(i + i // 2) % 2]
                    await asyncio.sleep(max(0.0, demoted_at + args.gap - time.time()))
                    master = await master_of(sql)
                    candidate = 2 if master == 1 else 1
                    _, before = await mariadb_positions(sql, master)
                    behind = before[master] - before[candidate]
                    if kind == "hand":
                        record = await hand_switchover(cluster, sql, master, candidate, bypassing)
                    else:
                        record = await ferry_switchover(app, client, cluster_id, ids[candidate])
                    record.update(kind=kind, round=i // 2, old_master=master, candidate=candidate,
                                  candidate_behind_at_start=behind)  # fmt: skip
                    demoted_at = record.pop("demoted_at", time.time())
                    records[kind].append(record)
                    emit({"clients": clients, **record})
                level_t1, level_last = await mariadb_positions(sql, await master_of(sql))
                acked_t1 = (await writer.command("count"))["acked"]
                master = await master_of(sql)
                ledger = await writer.stop()
                writer = None
            span = level_t1 - level_t0
            commits = max(level_last.values()) - max(level_first.values())
            third = level_last[3] - level_first[3]
            check = verify_mariadb(cluster, ledger, master)
        finally:
            for s in sql.values():
                s.close()
            if writer is not None:
                writer.kill()
            cluster.stop()
    hand = [r for r in records["hand"] if r["ok"]]
    ferry = [r for r in records["ferry"] if r["ok"]]
    hand_median = statistics.median(r["window_s"] for r in hand) if hand else None
    ferry_median = statistics.median(r["window_s"] for r in ferry) if ferry else None
    ratio = None if not hand_median or ferry_median is None else ferry_median / hand_median
    return {
        "clients": clients,
        "keep_up": measured,
        "ferry_settings": {"catch_up_parallel_workers": parallel, "max_window_s": "default (10 s)"},
        "writer_commits_per_s": measured["master_commits_per_s"],
        "commits_per_s_over_switchovers": round(commits / span, 1),
        "acked_per_s_over_switchovers": round((acked_t1 - acked_t0) / span, 1),
        "single_threaded_replica_s3_apply_per_s": round(third / span, 1),
        "single_threaded_replica_s3_behind_at_end": max(level_last.values()) - level_last[3],
        "hand": {
            "succeeded": len(hand),
            "of": len(records["hand"]),
            "window_s": summary([r["window_s"] for r in hand]),
            "steps": shares(
                [r["steps_s"] for r in hand], ("read_only", "read_position", "master_gtid_wait", "promote")
            ),
            "candidate_behind_at_start": summary([r["candidate_behind_at_start"] for r in records["hand"]]),
            "failures": [r["error"] for r in records["hand"] if not r["ok"]],
        },
        "ferry": {
            "succeeded": len(ferry),
            "of": len(records["ferry"]),
            "window_s": summary([r["window_s"] for r in ferry]),
            "steps": shares([r["window_steps_s"] for r in ferry], WINDOW_STEPS),
            "catch_up_waited_s": summary([r["waited_s"] for r in ferry if r["waited_s"] is not None]),
            "operation_s": summary([r["operation_s"] for r in ferry]),
            "candidate_behind_at_start": summary([r["candidate_behind_at_start"] for r in records["ferry"]]),
            "failures": [r["error"] for r in records["ferry"] if not r["ok"]],
        },
        "ratio_ferry_to_hand": None if ratio is None else round(ratio, 3),
        "goal_half_met": None if ratio is None else ratio <= 0.5,
        "ferry_completes_what_hand_completes": len(ferry) >= len(hand),
        "verify": check,
        "mariadb": version,
    }


# -- ferryd --------------------------------------------------------------------------------------------------


async def ferryd_positions(nodes: dict[str, FerrydNode], master: str) -> tuple[float, dict[str, int]]:
    async def read(name: str, node: FerrydNode) -> tuple[str, int]:
        status = await asyncio.to_thread(node.status)
        what = "gtid_binlog_pos" if name == master else "gtid_current_pos"
        return name, total(status.get(what))

    at = time.monotonic()
    return at, dict(await asyncio.gather(*(read(n, node) for n, node in nodes.items())))


async def ferryd_master(nodes: dict[str, FerrydNode]) -> str:
    statuses = {n: await asyncio.to_thread(node.status) for n, node in nodes.items()}
    masters = [n for n, s in statuses.items() if not s["read_only"] and not s["replication"]]
    if len(masters) != 1:
        raise SystemExit(f"expected one writable node, found {masters}")
    return masters[0]


async def ferryd_level(clients: int, args: argparse.Namespace) -> dict[str, Any]:
    from ferry_control.drivers.ferry_protocol import FerryProtocolClient
    from tests.helpers import LOAD_FIELD, LoadWriter, register
    from tests.helpers import LOAD_TABLE as LOAD_TABLE_FERRYD

    with tempfile.TemporaryDirectory(prefix="ferry-bench-busy-ferryd-") as tmp:
        ferryd = FerrydCluster(Path(tmp) / "nodes", read_only_replicas=True)
        ferryd.start()
        writer: LoadWriter | None = None
        try:
            nodes = {"master": ferryd.master, "replica1": ferryd.replica1, "replica2": ferryd.replica2}
            async with control_plane(tmp, node_token=NODE_TOKEN, server_trusted_hosts=LOOPBACK) as (app, client):
                cluster_id, ids = await register(client, ferryd, name="bench")
                writer = await LoadWriter.start(ferryd.nodes, clients=clients, domains=len(DOMAINS), rate=None)
                await asyncio.sleep(args.warmup)
                measured = await keep_up(lambda: ferryd_positions(nodes, "master"), "master", args.measure)
                parallel = 0 if measured["all_keep_up"] else args.parallel_workers
                emit({"kind": "ferryd", "clients": clients, "keep_up": measured, "catch_up_parallel_workers": parallel})
                if parallel:
                    patched = await client.patch(f"/api/v1/clusters/{cluster_id}",
                                                 json={"catch_up_parallel_workers": parallel})  # fmt: skip
                    if patched.status_code != 200:
                        raise SystemExit(f"PATCH catch_up_parallel_workers: {patched.text}")
                levelling = await ferry_switchover(app, client, cluster_id, ids["replica1"])  # as for MariaDB
                emit({"kind": "ferryd", "clients": clients, "levelling_switchover": levelling})
                demoted_at = levelling.pop("demoted_at", time.time())
                level_t0, level_first = await ferryd_positions(nodes, await ferryd_master(nodes))
                records = []
                for i in range(args.switchovers):
                    await asyncio.sleep(max(0.0, demoted_at + args.gap - time.time()))
                    master = await ferryd_master(nodes)
                    candidate = "replica1" if master == "master" else "master"
                    _, before = await ferryd_positions(nodes, master)
                    record = await ferry_switchover(app, client, cluster_id, ids[candidate])
                    record.update(kind="ferry", round=i, old_master=master, candidate=candidate,
                                  candidate_behind_at_start=before[master] - before[candidate])  # fmt: skip
                    demoted_at = record.pop("demoted_at", time.time())
                    records.append(record)
                    emit({"kind": "ferryd", "clients": clients, **record})
                master = await ferryd_master(nodes)
                level_t1, level_last = await ferryd_positions(nodes, master)
                summary_ = await writer.stop()
                writer = None
                # Convergence: the single-threaded replicas may be far behind; parallel apply raised for that only.
                for name in nodes:
                    if name != master:
                        body = {"registered_server_id": ids[name], "mode": "optimistic", "workers": 8}
                        raised = await wait_operation(app, client, cluster_id, "parallel-apply", body)
                        if raised["state"] != "succeeded":
                            raise SystemExit(f"parallel apply on {name}: {raised['error']}")
            target = nodes[master].status()["gtid_binlog_pos"]
            started = time.monotonic()
            for node in nodes.values():
                while True:  # in waits shorter than the helper's own HTTP timeout
                    body = node.post("/v1/wait-for-position", {"position": target, "timeout_ms": 20_000})
                    if body["reached"]:
                        break
                    if time.monotonic() - started > CONVERGE_S:
                        raise SystemExit(f"node {node.server_id} did not reach {target}: {body}")
            converge_s = time.monotonic() - started
            lost = extra = 0
            for node in nodes.values():
                async with await FerryProtocolClient.connect(node.listen) as connection:
                    for key, acked in summary_["acked"].items():
                        row = await connection.get(LOAD_TABLE_FERRYD, key)
                        have = int(row[LOAD_FIELD]) if row else 0
                        lost += max(0, acked - have)
                        extra += max(0, have - acked - summary_["unknown"].get(key, 0))
            checksums = [node.get("/v1/checksums") for node in nodes.values()]
            check = {
                "converge_s": round(converge_s, 1),
                "acked": sum(summary_["acked"].values()),
                "unknown_outcome": sum(summary_["unknown"].values()),
                "lost_acknowledged": lost,
                "applied_beyond_attempts": extra,
                "checksums_equal": all(c == checksums[0] for c in checksums),
            }
            if lost or extra or not check["checksums_equal"]:
                emit({"verify_failed": check})
                raise SystemExit(f"verification failed: {check}")
        finally:
            if writer is not None:
                writer.kill()
            ferryd.stop()
    span = level_t1 - level_t0
    ok = [r for r in records if r["ok"]]
    return {
        "clients": clients,
        "keep_up": measured,
        "ferry_settings": {"catch_up_parallel_workers": parallel, "max_window_s": "default (10 s)"},
        "writer_commits_per_s": measured["master_commits_per_s"],
        "commits_per_s_over_switchovers": round((max(level_last.values()) - max(level_first.values())) / span, 1),
        "single_threaded_replica2_apply_per_s": round((level_last["replica2"] - level_first["replica2"]) / span, 1),
        "single_threaded_replica2_behind_at_end": max(level_last.values()) - level_last["replica2"],
        "ferry": {
            "succeeded": len(ok),
            "of": len(records),
            "window_s": summary([r["window_s"] for r in ok]),
            "steps": shares([r["window_steps_s"] for r in ok], WINDOW_STEPS),
            "catch_up_waited_s": summary([r["waited_s"] for r in ok if r["waited_s"] is not None]),
            "operation_s": summary([r["operation_s"] for r in ok]),
            "candidate_behind_at_start": summary([r["candidate_behind_at_start"] for r in records]),
            "failures": [r["error"] for r in records if not r["ok"]],
        },
        "hand": "none: ferryd has no SQL interface for a hand sequence",
        "verify": check,
        "ferryd": str(protocol.ferryd_binary()),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    level = mariadb_level if args.what == "mariadb" else ferryd_level
    started, load_at_start = time.monotonic(), load_now()
    levels = []
    for clients in args.levels:
        figures = {**await level(clients, args), "machine_after": load_now()}
        emit({"level": figures})
        levels.append(figures)
    return {
        "benchmark": f"busy_switchover_{args.what}",
        "switchovers_per_level": args.switchovers,
        "gap_s": args.gap,
        "machine": {"at_start": load_at_start, "at_end": load_now(), "uname": os.uname().release},
        "seconds": round(time.monotonic() - started, 1),
        "levels": levels,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("mariadb", "ferryd"):
        p = sub.add_parser(name)
        p.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8],
                       help="writer clients per level")  # fmt: skip
        p.add_argument("--switchovers", type=int, default=10, help="of each kind per level")
        p.add_argument("--gap", type=float, default=5.0, help="seconds from an old master's demotion to the next move")
        p.add_argument("--warmup", type=float, default=5.0)
        p.add_argument("--measure", type=float, default=10.0, help="seconds the keep-up measurement spans")
        p.add_argument("--parallel-workers", type=int, default=8,
                       help="catch_up_parallel_workers where a replica falls behind")  # fmt: skip
    w = sub.add_parser("writer")
    w.add_argument("--config", required=True)
    args = parser.parse_args()
    os.environ.setdefault("FERRY_ENVIRONMENT", "development")
    warnings.filterwarnings("ignore", module="aiomysql")  # the server's notes ("SLAVE '' stopped")
    if args.what == "writer":
        asyncio.run(writer_process(args.config))
        return
    print(json.dumps(asyncio.run(run(args))))


if __name__ == "__main__":
    main()
