"""The careful hand sequence of a MariaDB switchover — the baseline Ferry's switchover is measured against, in the
busy-cluster test and backend/bench/busy_switchover.py — with the SQL connections it runs over.

The order is the one in the operator's notes on moving the master (`../shared/mariadb.md`): old master `SET GLOBAL
read_only=1`, end the sessions of users that bypass it, read `@@gtid_binlog_pos` P, candidate `SELECT
MASTER_GTID_WAIT(P, 60)` (a timeout: read_only=0 on the old master again, counted failed), `STOP ALL SLAVES; RESET
SLAVE '<c>' ALL; SET GLOBAL read_only=0`; then the other replicas repointed (`MASTER_USE_GTID=slave_pos`) and the old
master demoted (`MASTER_DEMOTE_TO_SLAVE=1`). Everything a careful operator prepares beforehand (connections open,
connection names, the users that bypass read_only) is read before the window. The window is timed from just before
read_only=1 is sent until read_only=0 has returned on the candidate, on the clock Ferry's `unavailable_s` uses."""

from __future__ import annotations

import time
from typing import Any

import aiomysql

from ferry_control.core.gtid import seq_by_domain
from tests.mariadb_cluster import MariadbCluster

#: MASTER_GTID_WAIT's bound in the hand sequence (what a careful operator gives it).
GTID_WAIT_S = 60


class Sql:
    """One aiomysql connection as the cluster's admin login (over TCP, as Ferry's driver connects)."""

    def __init__(self, conn: aiomysql.Connection, number: int):
        self.conn, self.number = conn, number

    @classmethod
    async def open(cls, cluster: MariadbCluster, number: int) -> Sql:
        admin = cluster.users.admin
        conn = await aiomysql.connect(
            host="127.0.0.1", port=cluster.server(number).port, user=admin.name, password=admin.password,
            autocommit=True, connect_timeout=5,
        )  # fmt: skip
        return cls(conn, number)

    async def rows(self, statement: str, args: Any = None) -> list[dict[str, Any]]:
        async with self.conn.cursor(aiomysql.DictCursor) as cur:
            await cur.execute(statement, args)
            return list(await cur.fetchall())

    async def run(self, statement: str, args: Any = None) -> None:
        async with self.conn.cursor() as cur:
            await cur.execute(statement, args)

    async def value(self, statement: str, args: Any = None) -> Any:
        async with self.conn.cursor() as cur:
            await cur.execute(statement, args)
            row = await cur.fetchone()
            return row[0] if row else None

    def close(self) -> None:
        self.conn.close()


async def open_all(cluster: MariadbCluster) -> dict[int, Sql]:
    return {s.number: await Sql.open(cluster, s.number) for s in cluster.servers}


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


async def master_of(sql: dict[int, Sql]) -> int:
    """The one server with read_only off."""
    writable = [n for n, s in sql.items() if int(await s.value("SELECT @@read_only")) == 0]
    if len(writable) != 1:
        raise AssertionError(f"expected one writable server, found {writable}")
    return writable[0]


def bypassing_users(cluster: MariadbCluster) -> set[str]:
    """Users whose sessions write despite read_only (SUPER or READ_ONLY ADMIN), but the admin login itself."""
    grantees = cluster.sql(
        1, "SELECT DISTINCT GRANTEE FROM information_schema.USER_PRIVILEGES "
        "WHERE PRIVILEGE_TYPE IN ('SUPER', 'READ_ONLY ADMIN')",
    )  # fmt: skip
    return {g[0].rsplit("@", 1)[0].strip("'") for g in grantees} - {cluster.users.admin.name}


async def hand_switchover(
    cluster: MariadbCluster, sql: dict[int, Sql], master: int, candidate: int, bypassing: set[str]
) -> dict[str, Any]:
    """The hand sequence (module doc) from `master` to `candidate`: {ok, window_s, steps_s, sessions_killed,
    position, demoted_at} or {ok: False, error, held_s, steps_s} when MASTER_GTID_WAIT timed out (undone)."""
    m, c = sql[master], sql[candidate]
    others = [n for n in sql if n not in (master, candidate)]
    # Prepared beforehand, as a careful operator does: the connection names to stop and repoint.
    candidate_connections = [str(r["Connection_name"]) for r in await c.rows("SHOW ALL SLAVES STATUS")]
    other_connections = {n: [str(r["Connection_name"]) for r in await sql[n].rows("SHOW ALL SLAVES STATUS")]
                         for n in others}  # fmt: skip
    users = ", ".join(quote(u) for u in sorted(bypassing)) or "''"
    steps: dict[str, float] = {}
    t0 = time.perf_counter()
    await m.run("SET GLOBAL read_only = 1")
    sessions = await m.rows(
        f"SELECT ID FROM information_schema.PROCESSLIST WHERE USER IN ({users}) AND ID <> CONNECTION_ID() "
        "AND COMMAND NOT IN ('Binlog Dump', 'Slave_IO', 'Slave_SQL', 'Slave_worker', 'Daemon', 'Killed')"
    )
    for s in sessions:
        await m.run(f"KILL CONNECTION {int(s['ID'])}")
    t1 = time.perf_counter()
    steps["read_only"] = t1 - t0
    position = str(await m.value("SELECT @@gtid_binlog_pos"))
    t2 = time.perf_counter()
    steps["read_position"] = t2 - t1
    waited = await c.value("SELECT MASTER_GTID_WAIT(%s, %s)", (position, GTID_WAIT_S))
    t3 = time.perf_counter()
    steps["master_gtid_wait"] = t3 - t2
    if int(waited) != 0:
        await m.run("SET GLOBAL read_only = 0")  # undo: nothing else was touched
        return {"ok": False, "error": f"MASTER_GTID_WAIT({position}, {GTID_WAIT_S}) returned {waited}: undone",
                "held_s": round(time.perf_counter() - t0, 4), "steps_s": steps}  # fmt: skip
    await c.run("STOP ALL SLAVES")
    for name in candidate_connections:
        await c.run(f"RESET SLAVE {quote(name)} ALL")
    await c.run("SET GLOBAL read_only = 0")
    t4 = time.perf_counter()
    steps["promote"] = t4 - t3
    window = t4 - t0
    # After the window: the others follow the new master, the old master demoted.
    r = cluster.users.replication
    target = (
        f"MASTER_HOST='127.0.0.1', MASTER_PORT={cluster.server(candidate).port}, MASTER_USER={quote(r.name)}, "
        f"MASTER_PASSWORD={quote(r.password)}, MASTER_CONNECT_RETRY=1"
    )
    for n, names in other_connections.items():
        for name in names:
            await sql[n].run(f"STOP SLAVE {quote(name)}")
            await sql[n].run(f"CHANGE MASTER {quote(name)} TO {target}, MASTER_USE_GTID=slave_pos")
            await sql[n].run(f"START SLAVE {quote(name)}")
    await m.run(f"CHANGE MASTER '' TO {target}, MASTER_USE_GTID=slave_pos, MASTER_DEMOTE_TO_SLAVE=1")
    await m.run("START SLAVE ''")
    demoted_at = time.time()
    # The new master has everything the old one had when it stopped taking writes.
    have = seq_by_domain(str(await c.value("SELECT @@gtid_binlog_pos")))
    missing = {d: s for d, s in seq_by_domain(position).items() if have.get(d, 0) < s}
    if missing:
        raise AssertionError(f"the hand's new master s{candidate} lacks {missing} of P = {position}")
    return {
        "ok": True,
        "window_s": round(window, 6),
        "steps_s": {k: round(v, 6) for k, v in steps.items()},
        "sessions_killed": len(sessions),
        "position": position,
        "demoted_at": demoted_at,
    }
