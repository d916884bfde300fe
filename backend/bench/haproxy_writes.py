"""Benchmark: an application writing through HAProxy while Ferry moves the master — the write unavailability the
application sees, beside Ferry's own window, and proof that nothing acknowledged is lost and no server but the
master of the moment acknowledges a write.

Three real MariaDB 10.11 servers (scripts/mariadb_cluster.py), the control plane in this process served on a real
port (HAProxy's checks call it), its collector on, a private HAProxy from the configuration Ferry renders
(backend/tests/haproxy_proxy.py), and an application-style writer: --clients connections to HAProxy's writer port
only (one address), in 2 GTID domains, each inserting numbered rows one transaction at a time and reading
`@@server_id` in the same transaction, recording every acknowledged commit (which server, when). Then
--switchovers switchovers back and forth between servers 1 and 2; then, on fresh clusters, --failovers SIGKILLs of
the master's mariadbd, each ended by the automatic failover.

Per move: the application's window is the longest time between two acknowledged commits around it; Ferry's is the
operation's `unavailable_s` (switchover: old master read-only → new master writable) or the time from the SIGKILL to
the new master writable (failover). Afterwards every acknowledged row must be on every surviving server, and every
acknowledgement must come from the master of its moment: not the old master after the promotion ended, not the new
one before the old one's read-only began.

    .venv/bin/python backend/bench/haproxy_writes.py [--switchovers 20] [--failovers 3] [--clients 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

import aiomysql  # noqa: E402
import httpx  # noqa: E402
import pymysql  # noqa: E402
from bench.measure import quantile  # noqa: E402
from cryptography.fernet import Fernet  # noqa: E402
from fastapi import FastAPI  # noqa: E402

from ferry_control.core.config import Settings  # noqa: E402
from ferry_control.core.db import session_scope  # noqa: E402
from ferry_control.core.migrate import upgrade  # noqa: E402
from ferry_control.core.security import Role  # noqa: E402
from ferry_control.main import create_app  # noqa: E402
from ferry_control.services.tokens import TokenService  # noqa: E402
from tests.ferryd_cluster import free_port_pair  # noqa: E402
from tests.haproxy_proxy import Haproxy  # noqa: E402
from tests.helpers import serve  # noqa: E402
from tests.mariadb_cluster import MariadbCluster  # noqa: E402
from tests.mariadb_load import register_mariadb  # noqa: E402

TABLE = "app.acked"


@dataclass
class Ack:
    client: int
    seq: int
    domain: int
    server_id: int
    at: float  # time.monotonic()
    wall: datetime


@dataclass
class ProxiedWriter:
    """Clients writing through one address; every acknowledged commit recorded."""

    address: str
    user: str
    password: str
    clients: int
    acks: list[Ack] = field(default_factory=list)
    unknown: int = 0
    refused: int = 0
    #: (time.monotonic(), client, error) of every failed attempt.
    errors: list[tuple[float, int, str]] = field(default_factory=list)
    _stop: bool = False
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def connect(self) -> aiomysql.Connection:
        host, port = self.address.split(":")
        return await aiomysql.connect(host=host, port=int(port), user=self.user, password=self.password,
                                      autocommit=False, connect_timeout=2)  # fmt: skip

    async def start(self) -> None:
        conn = await self.connect()
        async with conn.cursor() as cur:
            await cur.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (client INT, seq INT, PRIMARY KEY (client, seq))")
        await conn.commit()
        conn.close()
        self._tasks = [asyncio.create_task(self._client(c)) for c in range(self.clients)]

    async def stop(self) -> None:
        self._stop = True
        await asyncio.gather(*self._tasks)

    async def _client(self, client: int) -> None:
        domain = 1 + client % 2
        seq = 0
        conn: aiomysql.Connection | None = None
        while not self._stop:
            seq += 1
            try:
                if conn is None:
                    conn = await self.connect()
                    async with conn.cursor() as cur:
                        await cur.execute("SET SESSION gtid_domain_id = %s", (domain,))
                async with conn.cursor() as cur:
                    await cur.execute(f"INSERT INTO {TABLE} VALUES (%s, %s)", (client, seq))
                    await cur.execute("SELECT @@server_id")
                    (server_id,) = await cur.fetchone()
                await conn.commit()
                self.acks.append(Ack(client, seq, domain, int(server_id), time.monotonic(), datetime.now(UTC)))
            except (TimeoutError, pymysql.err.MySQLError, OSError) as e:
                code = e.args[0] if isinstance(e, pymysql.err.MySQLError) and e.args else None
                self.errors.append((time.monotonic(), client, f"{type(e).__name__} {code}"))
                if code == 1290:
                    self.refused += 1
                else:
                    self.unknown += 1
                if conn is not None:
                    conn.close()
                conn = None
                await asyncio.sleep(0.005)  # a client's pause before reconnecting through the proxy
        if conn is not None:
            conn.close()


@asynccontextmanager
async def stack(
    tmp: Path, cluster: MariadbCluster
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, int, dict[int, int], Haproxy, str]]:  # noqa: E501
    database_url = f"sqlite+aiosqlite:///{tmp}/control.sqlite3"
    upgrade(database_url)
    socket_path = tmp / "haproxy.sock"
    settings = Settings(
        environment="development", database_url=database_url, collector_enabled=True, drill_scheduler_enabled=False,
        node_read_retries_max=0, secret_keys=Fernet.generate_key().decode(), haproxy_admin_sockets=[str(socket_path)],
    )  # fmt: skip
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with session_scope(app.state.sessionmaker) as session:
            _, operator = await TokenService(session, settings).create("bench", Role.operator)
            _, viewer = await TokenService(session, settings).create("haproxy", Role.viewer)
        headers = {"Authorization": f"Bearer {operator}"}
        async with (
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://bench", headers=headers
            ) as client,
            serve(app) as api,
        ):
            cluster_id, ids = await register_mariadb(client, cluster, name="bench", auto_failover=True)
            await app.state.collector.run_cycle()
            writer_bind = f"127.0.0.1:{free_port_pair()[0]}"
            config = (await client.get(f"/api/v1/clusters/{cluster_id}/haproxy-config", params={
                "writer_bind": writer_bind, "reader_bind": f"127.0.0.1:{free_port_pair()[0]}",
                "admin_socket": str(socket_path), "ferry_address": api.removeprefix("http://")})).text  # fmt: skip
            proxy = Haproxy(tmp / "haproxy", config, viewer).start()
            try:
                backend = f"ferry_{cluster_id}_writer"
                deadline = time.monotonic() + 30
                while [s for s, st in proxy.stat(backend).items() if st.startswith("UP")] != [f"s{ids[1]}"]:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"HAProxy's checks never settled on the master: {proxy.stat(backend)}")
                    await asyncio.sleep(0.05)
                yield app, client, cluster_id, ids, proxy, writer_bind
            finally:
                proxy.stop()


def app_window(acks: list[Ack], start: float, end: float) -> float:
    """The longest gap between consecutive acknowledged commits (any client) overlapping [start, end]."""
    times = sorted(a.at for a in acks)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b >= start and a <= end]
    return max(gaps, default=0.0)


def parse(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


async def operation(client: httpx.AsyncClient, cluster_id: int, operation_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        body = (await client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        if body["state"] not in ("pending", "running"):
            return body
        if time.monotonic() > deadline:
            raise SystemExit(f"operation {operation_id} did not end")
        await asyncio.sleep(0.05)


def misattributed(acks: list[Ack], moves: list[tuple[int, int, datetime, datetime]]) -> int:
    """Acknowledgements by a server that was not the master of their moment. The master is the first move's old
    one until that move's promotion ended, then that move's new one, and so on; an acknowledgement from a move's
    old master between its read-only and its promotion is a commit made before the read-only, received late."""
    wrong = 0
    for ack in acks:
        master = moves[0][0]
        for _, new, _, promoted_at in moves:
            if ack.wall >= promoted_at:
                master = new
        if ack.server_id == master:
            continue
        if any(ack.server_id == old and read_only_at <= ack.wall <= promoted_at
               for old, _, read_only_at, promoted_at in moves):  # fmt: skip
            continue
        wrong += 1
    return wrong


def converged(cluster: MariadbCluster, numbers: list[int]) -> None:
    """Until the servers have the same @@gtid_current_pos (bounded)."""
    deadline = time.monotonic() + 60
    while len({cluster.value(n, "@@gtid_current_pos") for n in numbers}) > 1:
        if time.monotonic() > deadline:
            raise SystemExit(f"servers {numbers} did not converge within 60 s")
        time.sleep(0.05)


def missing_rows(cluster: MariadbCluster, numbers: list[int], acks: list[Ack]) -> int:
    converged(cluster, numbers)
    missing = 0
    for number in numbers:
        text = cluster.value(number, f"(SELECT GROUP_CONCAT(CONCAT(client, ':', seq)) FROM {TABLE})") or ""
        present = set(text.split(","))
        missing += sum(1 for a in acks if f"{a.client}:{a.seq}" not in present)
    return missing


async def switchovers(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ferry-bench-haproxy-") as tmp_dir:
        tmp = Path(tmp_dir)
        cluster = MariadbCluster(tmp / "db", 3, die_with_parent=True)
        cluster.start()
        cluster.sql(1, "SET GLOBAL group_concat_max_len = 1073741824")
        for n in (2, 3):
            cluster.sql(n, "SET GLOBAL group_concat_max_len = 1073741824")
        try:
            async with stack(tmp, cluster) as (_, client, cluster_id, ids, proxy, writer_bind):
                users = cluster.users
                writer = ProxiedWriter(writer_bind, users.workload.name, users.workload.password, args.clients)
                await writer.start()
                await asyncio.sleep(1.0)  # the writer under way before the first move (a schedule)
                rows = []
                moves = []
                for i in range(args.switchovers):
                    old, new = (1, 2) if i % 2 == 0 else (2, 1)
                    started = time.monotonic()
                    response = await client.post(f"/api/v1/clusters/{cluster_id}/operations/switchover",
                                                 json={"candidate_registered_server_id": ids[new]})  # fmt: skip
                    body = await operation(client, cluster_id, response.json()["id"])
                    if body["state"] != "succeeded":
                        raise SystemExit(f"switchover {i} {body['state']}: {body['error']}")
                    await asyncio.sleep(0.5)  # writes resume on the new master before the next move (a schedule)
                    steps = {s["name"]: s for s in body["steps"]}
                    moves.append((old, new, parse(steps["old_master_read_only"]["started_at"]),
                                  parse(steps["promote_candidate"]["finished_at"])))  # fmt: skip
                    ferry_ms = 1000 * body["result"]["unavailable_s"]
                    app_ms = 1000 * app_window(writer.acks, started, time.monotonic())
                    proxies_ok = all(p["ok"] for p in body["result"].get("proxies", []))
                    rows.append({"switchover": i, "ferry_ms": round(ferry_ms, 1), "app_ms": round(app_ms, 1),
                                 "proxies_ok": proxies_ok})  # fmt: skip
                    print(json.dumps(rows[-1]), flush=True)
                await writer.stop()
            missing = missing_rows(cluster, [1, 2, 3], writer.acks)
            wrong = misattributed(writer.acks, moves)
        finally:
            cluster.stop()
    return {"rows": rows, "acked": len(writer.acks), "missing": missing, "misattributed": wrong,
            "unknown": writer.unknown, "refused": writer.refused}  # fmt: skip


async def failovers(args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    acked = missing = wrong = 0
    for run in range(args.failovers):
        with tempfile.TemporaryDirectory(prefix="ferry-bench-haproxy-failover-") as tmp_dir:
            tmp = Path(tmp_dir)
            cluster = MariadbCluster(tmp / "db", 3, semi_sync=True, durable=True, die_with_parent=True)
            cluster.start()
            for n in (1, 2, 3):
                cluster.sql(n, "SET GLOBAL group_concat_max_len = 1073741824")
            try:
                async with stack(tmp, cluster) as (_, client, cluster_id, ids, proxy, writer_bind):
                    users = cluster.users
                    writer = ProxiedWriter(writer_bind, users.workload.name, users.workload.password, args.clients)
                    await writer.start()
                    await asyncio.sleep(2.0)  # the collector has seen the master writing (a schedule)
                    killed = time.monotonic()
                    killed_wall = datetime.now(UTC)
                    cluster.kill(1)
                    failover_id = None
                    while failover_id is None:
                        listed = (await client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
                        failover_id = next((o["id"] for o in listed if o["type"] == "failover"), None)
                        if time.monotonic() - killed > 120:
                            raise SystemExit("no failover within 120 s")
                        await asyncio.sleep(0.02)
                    body = await operation(client, cluster_id, failover_id)
                    if body["state"] != "succeeded":
                        raise SystemExit(f"failover {run} {body['state']}: {body['error']}")
                    await asyncio.sleep(1.0)
                    steps = {s["name"]: s for s in body["steps"]}
                    new_number = next(
                        n for n, i in ids.items() if i == body["result"].get("new_master_registered_server_id")
                    )
                    promoted = parse(steps["promote_candidate"]["finished_at"])
                    ferry_ms = 1000 * (promoted - killed_wall).total_seconds()
                    app_ms = 1000 * app_window(writer.acks, killed, time.monotonic())
                    await writer.stop()
                    survivors = [n for n in (1, 2, 3) if n != 1]
                    acked += len(writer.acks)
                    missing += missing_rows(cluster, survivors, writer.acks)
                    wrong += misattributed(writer.acks, [(1, new_number, killed_wall, promoted)])
                    proxies_ok = all(p["ok"] for p in body["result"].get("proxies", []))
                    rows.append({"failover": run, "ferry_ms": round(ferry_ms, 1), "app_ms": round(app_ms, 1),
                                 "proxies_ok": proxies_ok})  # fmt: skip
                    print(json.dumps(rows[-1]), flush=True)
            finally:
                cluster.stop()
    return {"rows": rows, "acked": acked, "missing": missing, "misattributed": wrong}


def summary(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    values = [r[key] for r in rows]
    return {"median": round(statistics.median(values), 1), "p90": round(quantile(values, 0.9), 1),
            "max": round(max(values), 1)}  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--switchovers", type=int, default=20)
    parser.add_argument("--failovers", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    switched = await switchovers(args) if args.switchovers else {"rows": []}
    failed = await failovers(args) if args.failovers else {"rows": []}
    result: dict[str, Any] = {"benchmark": "writes_through_haproxy", "clients": args.clients, "domains": 2}
    if switched["rows"]:
        result["switchover"] = {"count": len(switched["rows"]), "ferry_ms": summary(switched["rows"], "ferry_ms"),
                                "app_ms": summary(switched["rows"], "app_ms"), "acked": switched["acked"],
                                "missing": switched["missing"], "misattributed": switched["misattributed"],
                                "proxies_ok": all(r["proxies_ok"] for r in switched["rows"])}  # fmt: skip
    if failed["rows"]:
        result["failover"] = {"count": len(failed["rows"]), "ferry_ms": summary(failed["rows"], "ferry_ms"),
                              "app_ms": summary(failed["rows"], "app_ms"), "acked": failed["acked"],
                              "missing": failed["missing"], "misattributed": failed["misattributed"],
                              "proxies_ok": all(r["proxies_ok"] for r in failed["rows"])}  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
