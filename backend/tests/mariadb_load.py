"""What the API-level MariaDB tests share: registering a MariaDB cluster through the API (its logins as the
cluster's encrypted credentials), the shape of the replication as root sees it, and a load writer that follows the
writable master and keeps a ledger of every commit it attempted (aiomysql, in the test's event loop)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import aiomysql
import httpx
import pymysql

from ferry_control.services.orchestrator.gtid import errant_gtids
from tests.mariadb_cluster import MariadbCluster, driver, eventually

#: The load writer's table (in the workload user's schema): client c of domain d increments row `d<d>c<c>`.
LOAD_TABLE = "app.load"
#: Errors that mean "this server refuses writes": read-only (1290) — the writer looks for the master.
READ_ONLY_ERRNOS = frozenset({1290})
#: Client errors that leave a commit's outcome unknown (connection lost mid-statement) or that are no answer.
LOST_ERRNOS = frozenset({2003, 2006, 2013, 2055, 1927, 1053})


def seed000_tables(cluster: MariadbCluster, *, rows: bool = False) -> str:
    """Table app.t1 on master 1 (domain 1) and app.t2 on master 2 (domain 2) — with a row each when `rows` — once
    every server has them; returns the converged position."""
    for number in (1, 2):
        row = f" INSERT INTO app.t{number} VALUES (1);" if rows else ""
        cluster.sql(number, f"CREATE TABLE app.t{number} (id INT PRIMARY KEY);{row}")
    return cluster.wait_converged()


async def register_mariadb(
    client: httpx.AsyncClient, cluster: MariadbCluster, name: str = "maria", **cluster_fields: Any
) -> tuple[int, dict[int, int]]:
    """A cluster holding every server of `cluster` (kind mariadb, SQL port as both protocol and admin port);
    returns its id and the registered id of each server number."""
    users = cluster.users
    body = {
        "name": name,
        "db_user": users.admin.name,
        "db_password": users.admin.password,
        "replication_user": users.replication.name,
        "replication_password": users.replication.password,
        **cluster_fields,
    }
    response = await client.post("/api/v1/clusters", json=body)
    assert response.status_code == 201, response.text
    cluster_id = response.json()["id"]
    ids = {}
    for server in cluster.servers:
        response = await client.post(
            f"/api/v1/clusters/{cluster_id}/servers",
            json={"name": f"s{server.number}", "kind": "mariadb", "host": "127.0.0.1",
                  "protocol_port": server.port, "admin_port": server.port},
        )  # fmt: skip
        assert response.status_code == 201, response.text
        ids[server.number] = response.json()["id"]
    return cluster_id, ids


def shape(cluster: MariadbCluster) -> dict[int, tuple[str, list[tuple[str, str, str, str, str]]]]:
    """Per server number, as root reads it: @@read_only and each connection's (name, master port, IO running, SQL
    running, Using_Gtid)."""
    found = {}
    for server in cluster.servers:
        connections = sorted(
            (c["Connection_name"], c["Master_Port"], c["Slave_IO_Running"], c["Slave_SQL_Running"], c["Using_Gtid"])
            for c in cluster.replica_status(server.number)
        )
        found[server.number] = (cluster.value(server.number, "@@read_only"), connections)
    return found


def assert_one_master(cluster: MariadbCluster, master: int, context: object = None) -> None:
    """`master` is the only writable server, replicating from nobody; every other server replicates from it with
    GTID (slave_pos), on one connection, both threads running."""
    port = str(cluster.server(master).port)
    for number, (read_only, connections) in shape(cluster).items():
        if number == master:
            assert (read_only, connections) == ("0", []), (context, number, read_only, connections)
        else:
            assert read_only == "1", (context, number)
            # (a demoted old master replicates on the connection the settings name, the others on theirs)
            assert [c[1:] for c in connections] == [(port, "Yes", "Yes", "Slave_Pos")], (context, number, connections)


def errant_everywhere(cluster: MariadbCluster, master: int) -> dict[int, list[str]]:
    """Errant GTIDs (per domain, from gtid_binlog_state) of every server against `master`: server → GTIDs."""

    def read(number: int) -> tuple[str, str, int]:
        row = cluster.sql(number, "SELECT @@gtid_binlog_pos, @@gtid_binlog_state, @@server_id")[0]
        return row[0], row[1], int(row[2])

    master_pos, master_state, _ = read(master)
    found = {}
    for server in cluster.servers:
        if server.number == master:
            continue
        pos, state, server_id = read(server.number)
        errant = errant_gtids(
            candidate_binlog_pos=pos, candidate_binlog_state=state, candidate_server_id=server_id,
            master_binlog_pos=master_pos, master_binlog_state=master_state,
        )  # fmt: skip
        if errant:
            found[server.number] = [e.gtid for e in errant]
    return found


def load_rows(cluster: MariadbCluster, number: int) -> dict[str, int]:
    return {k: int(n) for k, n in cluster.sql(number, f"SELECT k, n FROM {LOAD_TABLE}")}


@dataclass
class Ledger:
    acked: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)
    refused: int = 0
    master_changes: int = 0
    #: Each client's ack times (monotonic), for the write-unavailability a client saw.
    gaps_s: list[float] = field(default_factory=list)
    #: With `record_gtids`: the GTID of every acknowledged statement (its server_id names the server that took it).
    acked_gtids: list[str] = field(default_factory=list)


class MariadbLoadWriter:
    """`clients` connections as the workload user, client c in GTID domain `1 + c % domains` (SET SESSION
    gtid_domain_id), each incrementing its own row of LOAD_TABLE in autocommit, one statement at a time, at most
    `rate` attempts per second in all. Each follows the writable master: a read-only refusal or a lost connection
    sends it looking for the one server with read_only off. Every attempt ends acknowledged (counted), refused
    (nothing written) or unknown (the connection broke with the statement in flight).

    With `masters` (domain → server number: the two-master shape's masters), each client writes to its domain's master
    only, never looking elsewhere: a refusal there is counted as refused.

    With `record_gtids`, each acknowledged statement's GTID (@@last_gtid, read on the same connection after the
    acknowledgement) is kept.

    With `keys_per_client` > 1, client c increments its rows `d<d>c<c>k<j>` in turn (transactions of one client
    then touch different rows, so a replica applying in parallel is not serialised by row locks).

    With `replica_cost_s`, each statement also costs that long wherever it is applied with read_only on — on a
    replica, never on the master (`SLEEP(IF(@@read_only, cost, 0))`, which the binlog must carry as a statement:
    the writer's sessions set binlog_format=STATEMENT, which takes the BINLOG ADMIN privilege) — so a
    single-threaded replica applies at most 1/cost
    transactions a second whatever the machine, while the master pays nothing: the replicas fall behind the master
    by construction, as a replica paying a flush per transaction falls behind a master's group commit.

    `start()`, `pause()` (returns once no statement is in flight), `resume()`, `stop()` → the ledger."""

    def __init__(
        self,
        cluster: MariadbCluster,
        clients: int = 4,
        domains: int = 2,
        rate: float = 400.0,
        masters: dict[int, int] | None = None,
        record_gtids: bool = False,
        keys_per_client: int = 1,
        replica_cost_s: float = 0.0,
    ):
        self.cluster = cluster
        self.keys_per_client = keys_per_client
        self.replica_cost_s = replica_cost_s
        self.masters = masters
        self.record_gtids = record_gtids
        self.clients = clients
        self.domains = domains
        self.interval_s = clients / rate
        self.ledger = Ledger()
        self._running = asyncio.Event()
        self._stopping = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._master_port: int | None = None

    def key(self, client: int, turn: int = 0) -> str:
        if self.keys_per_client == 1:
            return f"d{self.domain(client)}c{client}"
        return f"d{self.domain(client)}c{client}k{turn % self.keys_per_client}"

    def statement(self) -> str:
        if not self.replica_cost_s:
            return f"UPDATE {LOAD_TABLE} SET n = n + 1 WHERE k = %s"
        return f"UPDATE {LOAD_TABLE} SET n = n + 1 + SLEEP(IF(@@read_only, {self.replica_cost_s:g}, 0)) WHERE k = %s"

    def domain(self, client: int) -> int:
        return 1 + client % self.domains

    async def start(self) -> MariadbLoadWriter:
        for domain in range(1, self.domains + 1) if self.masters else (None,):
            conn = await self._connect_master(domain)
            try:
                async with conn.cursor() as cur:
                    if domain is not None:
                        await cur.execute("SET SESSION gtid_domain_id = %s", (domain,))
                    await cur.execute(f"CREATE TABLE IF NOT EXISTS {LOAD_TABLE} (k VARCHAR(32) PRIMARY KEY, n BIGINT)")
                    for c in range(self.clients):
                        if domain is None or self.domain(c) == domain:
                            for turn in range(self.keys_per_client):
                                await cur.execute(f"INSERT INTO {LOAD_TABLE} VALUES (%s, 0)", (self.key(c, turn),))
            finally:
                conn.close()
        self._running.set()
        self._tasks = [asyncio.create_task(self._client(c)) for c in range(self.clients)]
        return self

    async def pause(self) -> Ledger:
        self._running.clear()
        await eventually("the load writer's statements in flight to end", lambda: self._in_flight == 0)
        return self.ledger

    def resume(self) -> None:
        self._running.set()

    async def stop(self) -> Ledger:
        self._stopping = True
        self._running.set()
        await asyncio.gather(*self._tasks)
        return self.ledger

    async def _connect(self, port: int) -> aiomysql.Connection:
        user = self.cluster.users.workload
        return await aiomysql.connect(
            host="127.0.0.1", port=port, user=user.name, password=user.password, autocommit=True, connect_timeout=2
        )

    async def _connect_master(self, domain: int | None = None) -> aiomysql.Connection:
        """A connection to the one server with read_only off (waiting, bounded, while there is none); with
        `masters`, to the given domain's master."""
        if self.masters and domain is not None:
            return await self._connect(self.cluster.server(self.masters[domain]).port)
        deadline = time.monotonic() + 60.0
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
                raise AssertionError("the load writer found no writable master for 60 s")
            await asyncio.sleep(0.01)

    async def _client(self, c: int) -> None:
        domain = self.domain(c)
        statement = self.statement()
        conn: aiomysql.Connection | None = None
        last_ack = time.monotonic()
        turn = -1
        while True:
            turn += 1
            key = self.key(c, turn)
            await self._running.wait()
            if self._stopping:
                break
            started = time.monotonic()
            self._in_flight += 1
            try:
                if conn is None:
                    conn = await self._connect_master(domain)
                    async with conn.cursor() as cur:
                        await cur.execute("SET SESSION gtid_domain_id = %s", (domain,))
                        if self.replica_cost_s:
                            await cur.execute("SET SESSION binlog_format = 'STATEMENT'")
                gtid = None
                try:
                    async with conn.cursor() as cur:
                        await cur.execute(statement, (key,))
                        if self.record_gtids:
                            await cur.execute("SELECT @@last_gtid")
                            (gtid,) = await cur.fetchone()
                except pymysql.err.MySQLError as e:
                    errno = e.args[0] if e.args and isinstance(e.args[0], int) else 2013
                    conn.close()
                    conn = None
                    if errno in READ_ONLY_ERRNOS:
                        self.ledger.refused += 1
                    elif errno in LOST_ERRNOS or isinstance(e, pymysql.err.InterfaceError):
                        self.ledger.unknown[key] = self.ledger.unknown.get(key, 0) + 1
                    else:
                        raise
                    continue
                self.ledger.acked[key] = self.ledger.acked.get(key, 0) + 1
                if gtid is not None:
                    self.ledger.acked_gtids.append(str(gtid))
                now = time.monotonic()
                self.ledger.gaps_s.append(now - last_ack)
                last_ack = now
            finally:
                self._in_flight -= 1
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - started)))
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


async def checksums_equal(cluster: MariadbCluster) -> dict[str, Any]:
    """Every server's table checksums, at one position (the cluster converged, no writes): equal."""
    cluster.wait_converged()
    drivers = [driver(cluster, s.number) for s in cluster.servers]
    try:
        sums = [await d.checksums() for d in drivers]
    finally:
        for d in drivers:
            await d.aclose()
    assert len({s.position for s in sums}) == 1, [s.position for s in sums]
    assert all(dict(s.tables) == dict(sums[0].tables) for s in sums), [dict(s.tables) for s in sums]
    return dict(sums[0].tables)


def assert_nothing_acknowledged_lost(cluster: MariadbCluster, writer: MariadbLoadWriter) -> None:
    """Every acknowledged increment is on every server exactly once (at most the unknown ones more). A failure names
    the server, the key, what it holds and what was acknowledged, with every server's positions and read-only flag."""
    ledger = writer.ledger
    for server in cluster.servers:
        rows = load_rows(cluster, server.number)
        for key, acked in ledger.acked.items():
            unknown = ledger.unknown.get(key, 0)
            if not acked <= rows[key] <= acked + unknown:
                state = {
                    s.number: cluster.sql(
                        s.number, "SELECT @@read_only, @@gtid_binlog_pos, @@gtid_slave_pos, @@gtid_current_pos"
                    )
                    for s in cluster.servers
                }
                raise AssertionError((server.number, key, rows[key], acked, unknown, state))
