"""The `mariadb` driver against real mariadbd processes (MariaDB 10.11), every call made as Ferry's least-privilege
user: what it reads (positions per domain, named connections, replicas, binlog events), what it changes (read-only,
CHANGE MASTER, START … UNTIL, STOP, RESET SLAVE ALL), its waits, checksums, killing of sessions that bypass
read-only and of statements whose caller gave up, and how the server's errors come out."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiomysql
import pymysql
import pytest

from ferry_control.core.config import Settings
from ferry_control.core.gtid import by_domain
from ferry_control.drivers.base import SEMI_SYNC_FALLEN_BACK, ChangeMaster, ConnectionSettings, IoState, SqlState
from ferry_control.drivers.credentials import ServerCredentials
from ferry_control.drivers.errors import DriverError, ErrorKind, ServerUnreachable
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.mariadb import (
    MariadbCredentials,
    MariadbDriver,
    MariadbDriverConfig,
    MariadbPools,
)
from ferry_control.drivers.mariadb.errors import (
    AccessDenied,
    PrivilegeMissing,
    ReplicationNotConfigured,
    ReplicationRunning,
    StatementTimedOut,
)
from ferry_control.drivers.mariadb.relay import failing_event
from ferry_control.drivers.mariadb.rows import cursor_parts, file_number
from ferry_control.models import ServerKind
from tests.conftest import LiveFactory
from tests.mariadb_cluster import WAIT_S, MariadbCluster, cluster_module, driver, eventually, wait_until
from tests.mariadb_load import register_mariadb


@asynccontextmanager
async def drivers(cluster: MariadbCluster, **overrides: object) -> AsyncIterator[list[MariadbDriver]]:
    """One driver per server (index 0 is server 1), closed afterwards."""
    made = [driver(cluster, s.number, **overrides) for s in cluster.servers]
    try:
        yield made
    finally:
        for d in made:
            await d.aclose()


def write(cluster: MariadbCluster, number: int, count: int, *, domain: int | None = None, table: str = "t") -> None:
    """`count` single-row transactions into app.<table> on server `number` (as root), in `domain` when given."""
    statements = [f"CREATE TABLE IF NOT EXISTS app.{table} (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40))"]
    if domain is not None:
        statements.append(f"SET SESSION gtid_domain_id = {domain}")
    statements += [f"INSERT INTO app.{table} (v) VALUES ('w{i}')" for i in range(count)]
    cluster.sql(number, ";\n".join(statements) + ";")


def counting_queries(driver: MariadbDriver) -> list[tuple[str, int]]:
    """The driver's statements from now on, each with how many rows it answered."""
    listed: list[tuple[str, int]] = []
    query = driver.sql.query

    async def counted(sql: str, args: Any = ()) -> Any:
        rows = await query(sql, args)
        listed.append((sql, len(rows)))
        return rows

    driver.sql.query = counted  # type: ignore[method-assign]
    return listed


def seq(position: str, domain: int) -> int:
    gtids = by_domain(position)
    return gtids[domain].seq if domain in gtids else 0


async def test_status_reads_positions_per_domain_connections_and_replicas(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 3)
    write(mariadb, 1, 2, domain=7)
    converged = mariadb.wait_converged()
    assert by_domain(converged).keys() == {0, 7}
    async with drivers(mariadb) as (master, replica, _):
        status = await master.status()
        assert status.server_id == 1 and status.default_domain == 0
        assert status.read_only is False
        assert status.positions.binlog == status.positions.current == converged
        assert status.positions.slave == ""
        # gtid_binlog_state: one GTID per (domain, server_id).
        assert status.positions.binlog_state == converged
        assert status.connections == ()
        assert {r.server_id for r in status.replicas} == {2, 3}
        assert {r.address for r in status.replicas} == {mariadb.server(2).address, mariadb.server(3).address}
        assert status.binlog_files and status.binlog_files[0].startswith("binlog.")
        assert status.listen_address == mariadb.server(1).address
        # The test clusters run with sync_binlog=0: the binlog reaches replicas before it is durable.
        assert status.replicas_may_be_ahead is True

        status = await replica.status()
        assert status.server_id == 2 and status.read_only is True
        assert status.positions.slave == status.positions.current == converged
        (connection,) = status.connections
        assert connection.name == ""
        assert connection.master_address == mariadb.server(1).address
        assert connection.running and connection.io_state == IoState.connected
        assert connection.sql_state in (SqlState.waiting_for_relay, SqlState.applying)
        assert connection.received_position == connection.applied_position == converged
        assert set(connection.lag) == {0, 7} and all(lag.transactions == 0 for lag in connection.lag.values())
        assert connection.last_error is None
        assert status.replicas == ()


async def test_sync_binlog_1_means_replicas_cannot_be_ahead(mariadb_factory: Callable[..., MariadbCluster]) -> None:
    durable = mariadb_factory(servers=1, durable=True)
    assert durable.value(1, "@@sync_binlog") == "1"
    async with drivers(durable) as (only,):
        assert (await only.status()).replicas_may_be_ahead is False


async def test_semi_sync_fallen_back_on_a_writable_master_is_a_warning_and_through_the_api_a_problem(
    mariadb: MariadbCluster, live_app: LiveFactory
) -> None:
    # Semi-sync master on, on the master and on a replica, with no replica acknowledging: one write on the master
    # waits out the (short) timeout and falls back to asynchronous.
    for number in (1, 2):
        mariadb.sql(
            number, "SET GLOBAL rpl_semi_sync_master_timeout = 100; SET GLOBAL rpl_semi_sync_master_enabled = 1;"
        )
    write(mariadb, 1, 1)
    assert mariadb.value(1, "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                            "WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_STATUS')") == "OFF"  # fmt: skip
    async with drivers(mariadb) as (master, replica, _):
        assert (await master.status()).warnings == (SEMI_SYNC_FALLEN_BACK,)
        assert (await replica.status()).warnings == (), "a read-only replica has no commits to wait for"
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, mariadb)
        await live.app.state.collector.run_cycle()
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        warnings = {node["registered_server_id"]: node["warnings"] for node in topology["nodes"]}
        assert warnings == {ids[1]: [SEMI_SYNC_FALLEN_BACK], ids[2]: [], ids[3]: []}
        overview = {c["id"]: c for c in (await live.client.get("/api/v1/clusters/overview")).json()}[cluster_id]
        assert overview["health"] == "degraded"
        assert any(p.endswith(f": {SEMI_SYNC_FALLEN_BACK}") for p in overview["problems"]), overview["problems"]


def test_the_failing_event_is_read_from_the_sql_error() -> None:
    error = (
        "Could not execute Write_rows_v1 event on table app.b; Duplicate entry '1' for key 'PRIMARY', Error_code: "
        "1062; handler error HA_ERR_FOUND_DUPP_KEY; the event's master log binlog.000001, end_log_pos 1010"
    )
    assert failing_event(error) == ("binlog.000001", 1010)
    assert failing_event("Error 'Table 'app.x' doesn't exist' on query. Default database: 'app'.") is None


async def test_read_only_on_and_off(mariadb: MariadbCluster) -> None:
    async with drivers(mariadb) as (master, *_):
        assert await master.set_read_only(True) is True
        assert mariadb.value(1, "@@read_only") == "1"
        assert (await master.status()).read_only is True
        assert await master.set_read_only(False) is False
        assert mariadb.value(1, "@@read_only") == "0"


async def test_change_master_start_stop_and_remove(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 2)
    mariadb.wait_converged()
    async with drivers(mariadb) as (_, replica2, replica3):
        # Server 3 leaves server 1 and replicates from server 2 on a named connection instead.
        await replica3.stop_replication("")
        (stopped,) = (await replica3.status()).connections
        assert not stopped.running and stopped.io_state == IoState.stopped and stopped.sql_state == SqlState.stopped
        await replica3.remove_replication("")
        assert (await replica3.status()).connections == ()
        await replica3.change_master("via2", ChangeMaster(master_address=mariadb.server(2).address, heartbeat_ms=500))
        await replica3.start_replication("via2")

        async def connected() -> bool:
            (c,) = (await replica3.status()).connections
            return c.name == "via2" and c.io_state == IoState.connected and c.running

        await eventually("server 3 connected to server 2 on 'via2'", connected)
        assert mariadb.replica_status(3)[0]["Slave_heartbeat_period"] == "0.500"
        write(mariadb, 1, 3)
        target = mariadb.value(1, "@@gtid_binlog_pos")
        assert (await replica3.wait_for_position(target, 10.0)).reached
        assert {r.server_id for r in (await replica2.status()).replicas} == {3}

        # An explicit GTID position (needs every connection stopped) and a delay.
        await replica3.stop_replication("via2")
        await replica3.change_master(
            "via2", ChangeMaster(master_address=mariadb.server(2).address, position=target, delay_s=0)
        )
        assert mariadb.value(3, "@@gtid_slave_pos") == target
        await replica3.start_replication("via2")
        await eventually("'via2' running again", connected)
        await replica3.stop_replication("via2")
        await replica3.remove_replication("via2")
        assert (await replica3.status()).connections == ()


async def test_change_master_by_binlog_file_and_offset(mariadb: MariadbCluster) -> None:
    async with drivers(mariadb) as (master, _, replica):
        await replica.remove_replication("")
        write(mariadb, 1, 2)
        status = await master.status()
        file = status.binlog_files[-1]
        offset = int(mariadb.sql(1, "SHOW MASTER STATUS")[0][1])
        await replica.change_master(
            "", ChangeMaster(master_address=mariadb.server(1).address, file=file, offset=offset)
        )
        await replica.start_replication("")
        rows = mariadb.sql(3, "SHOW SLAVE STATUS", names=True)
        fields = dict(zip(rows[0], rows[1], strict=True))
        assert fields["Using_Gtid"] == "No" and fields["Master_Log_File"] == file


async def test_connection_settings_are_reported_and_taken_back(mariadb: MariadbCluster) -> None:
    async with drivers(mariadb) as (_, replica, _):
        await replica.stop_replication("")
        wanted = ConnectionSettings(
            delay_s=1, heartbeat_ms=2500, parallel_mode="conservative", workers=2, domain_workers_max=0,
            semi_sync_replica=False, ignore_duplicates=False,
            filters={"ignore_server_ids": "9", "replicate_ignore_db": "scratch"},
        )  # fmt: skip
        await replica.change_master("", ChangeMaster(master_address=mariadb.server(1).address, settings=wanted))
        (connection,) = (await replica.status()).connections
        assert connection.settings == wanted and connection.delay_s == 1
        # A repoint passing back what was reported keeps it; without settings, the server's defaults for the rest.
        await replica.change_master("", ChangeMaster(master_address=mariadb.server(3).address, settings=wanted))
        (connection,) = (await replica.status()).connections
        assert connection.master_address == mariadb.server(3).address and connection.settings == wanted
        cleared = ConnectionSettings(
            parallel_mode="optimistic", workers=0, domain_workers_max=0, semi_sync_replica=False
        )
        await replica.change_master("", ChangeMaster(master_address=mariadb.server(1).address, settings=cleared))
        (connection,) = (await replica.status()).connections
        assert connection.settings.filters == {} and connection.settings.delay_s == 0
        await replica.start_replication("")
        write(mariadb, 1, 1)
        assert (await replica.wait_for_position(mariadb.value(1, "@@gtid_binlog_pos"), 10.0)).reached


async def test_start_until_a_gtid_position_stops_there(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 1)
    mariadb.wait_converged()
    async with drivers(mariadb) as (master, replica, _):
        await replica.stop_replication("")
        write(mariadb, 1, 4)
        start = seq(mariadb.value(2, "@@gtid_current_pos"), 0)
        until = f"0-1-{start + 2}"
        await replica.start_replication("", until=until)

        async def stopped_at_until() -> bool:
            (c,) = (await replica.status()).connections
            return c.sql_state == SqlState.until_reached and not c.running

        await eventually(f"the replica's SQL thread stopped by UNTIL {until}", stopped_at_until)
        assert (await replica.positions()).current == until
        await replica.start_replication("")
        master_position = (await master.positions()).binlog
        assert (await replica.wait_for_position(master_position, 10.0)).reached


async def test_wait_for_position_on_a_replica_times_out_then_is_reached(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 1)
    mariadb.wait_converged()
    async with drivers(mariadb) as (_, replica, _):
        await replica.stop_replication("")
        write(mariadb, 1, 2)
        target = mariadb.value(1, "@@gtid_binlog_pos")
        started = time.monotonic()
        result = await replica.wait_for_position(target, 0.5)
        assert not result.reached and 0.4 <= time.monotonic() - started < 5
        assert seq(result.position, 0) == seq(target, 0) - 2
        await replica.start_replication("")
        result = await replica.wait_for_position(target, 10.0)
        assert result.reached and result.position == target


async def test_wait_for_position_on_a_master_is_polled(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 1)
    async with drivers(mariadb) as (master, *_):
        now = mariadb.value(1, "@@gtid_binlog_pos")
        ahead = f"0-1-{seq(now, 0) + 1}"
        started = time.monotonic()
        result = await master.wait_for_position(ahead, 0.5)
        assert not result.reached and result.position == now and time.monotonic() - started >= 0.45
        waiting = asyncio.create_task(master.wait_for_position(ahead, 20.0))
        await asyncio.to_thread(write, mariadb, 1, 1)
        result = await waiting
        assert result.reached and result.position == ahead


async def test_recent_events_carry_gtids_commit_ids_tables_and_page_back(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 3)
    # Three transactions committed as one group (the master holds a group until three are waiting).
    mariadb.sql(1, "SET GLOBAL binlog_commit_wait_count = 3; SET GLOBAL binlog_commit_wait_usec = 5000000;")
    client = mariadb._client_args(mariadb.server(1))
    writers = [subprocess.Popen(client + ["-e", f"INSERT INTO app.t (v) VALUES ('group{i}')"]) for i in range(3)]
    assert all(w.wait(30) == 0 for w in writers)
    mariadb.sql(1, "SET GLOBAL binlog_commit_wait_count = 0; FLUSH NO_WRITE_TO_BINLOG BINARY LOGS;")
    write(mariadb, 1, 2, domain=5, table="u")
    async with drivers(mariadb) as (master, *_):
        page = await master.recent_events(100)
        gtids = [t.gtid for t in page.transactions]
        binlog = mariadb.value(1, "@@gtid_binlog_pos")
        assert page.next_before is None
        assert gtids[:2] == ["5-1-2", "5-1-1"] and f"0-1-{seq(binlog, 0)}" in gtids
        # Newest first, within a domain by descending seq_no, across two binlog files.
        zero = [t.seq_no for t in page.transactions if t.domain == 0]
        assert zero == sorted(zero, reverse=True) and len(zero) == seq(binlog, 0)
        assert len({t.file for t in page.transactions}) == 2
        grouped = [t for t in page.transactions if t.domain == 0 and t.file == "binlog.000001"][:3]
        assert [t.tables for t in grouped] == [("app.t",)] * 3
        assert grouped[0].commit_id is not None and {t.commit_id for t in grouped} == {grouped[0].commit_id}
        assert page.transactions[0].tables == ("app.u",) and page.transactions[0].server_id == 1

        only5 = await master.recent_events(100, domain=5)
        assert [t.gtid for t in only5.transactions] == ["5-1-2", "5-1-1"]

        walked: list[str] = []
        before = None
        while True:
            part = await master.recent_events(2, before=before)
            walked += [t.gtid for t in part.transactions]
            if part.next_before is None:
                break
            assert len(part.transactions) == 2
            before = part.next_before
        assert walked == gtids


async def test_binlog_scans_kept_between_reads_stay_bounded_when_a_read_hits_its_scan_bound(
    mariadb: MariadbCluster,
) -> None:
    """A read for a domain the binlog lacks scans back until events_scan_max and fails naming the bound; what it
    read is trimmed all the same, to the newest files and at most events_kept_max transactions (the newest file's
    always kept), so repeated reads cannot pull whole binlogs into the control plane's memory."""
    for _ in range(6):
        write(mariadb, 1, 4)
        mariadb.sql(1, "FLUSH NO_WRITE_TO_BINLOG BINARY LOGS")
    write(mariadb, 1, 4)
    async with drivers(mariadb, events_scan_max=60, events_kept_max=6) as (master, *_):
        for _ in range(3):
            with pytest.raises(DriverError) as bounded:
                await master.recent_events(10, domain=77)
            assert bounded.value.code == "events_scan_limit" and "60 binlog events" in bounded.value.message
            kept = master.sql.binlog_scans
            newest = max(kept, key=lambda f: int(f.rsplit(".", 1)[1]))
            assert len(kept) <= 4
            assert sum(len(scan.transactions) for file, scan in kept.items() if file != newest) <= 6
        page = await master.recent_events(3)
        assert len(page.transactions) == 3, "reads of what exists still work from the kept scans"


async def test_a_binlog_files_kept_scan_is_bounded_and_its_older_transactions_are_still_listed(
    mariadb: MariadbCluster,
) -> None:
    """The newest binlog file holds more transactions than events_kept_max: its kept scan holds only that many (the
    newest), whatever the file's size, and every listing — the newest few, a walk back page by page, one domain's
    older transactions — is what a driver without the bound lists."""
    write(mariadb, 1, 40)
    write(mariadb, 1, 5, domain=9, table="u")
    write(mariadb, 1, 30)
    async with drivers(mariadb) as (unbounded, *_):
        everything = [t.gtid for t in (await unbounded.recent_events(10_000)).transactions]
        nine = [t.gtid for t in (await unbounded.recent_events(10_000, domain=9)).transactions]
    assert len(nine) >= 5 and len(everything) > 75
    kept_max = 6

    def kept(driver: MariadbDriver) -> int:
        return sum(len(scan.transactions) for scan in driver.sql.binlog_scans.values())

    async with drivers(mariadb, events_kept_max=kept_max) as (master, *_):
        page = await master.recent_events(3)
        assert [t.gtid for t in page.transactions] == everything[:3]
        assert 0 < kept(master) <= kept_max, kept(master)
        assert [t.gtid for t in (await master.recent_events(10_000, domain=9)).transactions] == nine
        assert kept(master) <= kept_max
        walked: list[str] = []
        before = None
        while True:
            part = await master.recent_events(7, before=before)
            assert kept(master) <= kept_max, kept(master)
            walked += [t.gtid for t in part.transactions]
            if part.next_before is None:
                break
            before = part.next_before
        assert walked == everything


async def test_a_listing_reads_the_binlog_from_its_end_and_walks_back_in_windows(mariadb: MariadbCluster) -> None:
    """A file's first scan starts events_tail_bytes before its end, at an event boundary the server finds (probes of
    one row each), so listing the newest few reads a few events, not the file; a walk back page by page, and one
    domain's older transactions, read earlier windows and list what a driver reading the whole file lists."""
    write(mariadb, 1, 300)
    write(mariadb, 1, 4, domain=9, table="u")
    write(mariadb, 1, 200)
    async with drivers(mariadb, events_tail_bytes=10**9) as (whole, *_):
        everything = [t.gtid for t in (await whole.recent_events(10_000)).transactions]
        nine = [t.gtid for t in (await whole.recent_events(10_000, domain=9)).transactions]
        newest = (await whole.recent_events(3)).transactions
    assert len(everything) > 500 and len(nine) == 4
    async with drivers(mariadb, events_tail_bytes=2000) as (master, *_):
        listed = counting_queries(master)
        page = await master.recent_events(3)
        assert page.transactions == newest, "the same transactions, tables and offsets as a read of the whole file"
        # A fraction of the file's 2,000-odd events: a sample of its first ones, and its end from a found boundary.
        events_read = sum(n for sql, n in listed if "LIMIT %s, 1" not in sql and "BINLOG EVENTS" in sql)
        assert events_read < 400, listed
        assert [t.gtid for t in (await master.recent_events(10_000, domain=9)).transactions] == nine
        walked: list[str] = []
        before = None
        while True:
            part = await master.recent_events(45, before=before)
            walked += [t.gtid for t in part.transactions]
            if part.next_before is None:
                break
            before = part.next_before
        assert walked == everything


async def test_a_transaction_far_back_is_found_without_reading_the_binlog_after_it(mariadb: MariadbCluster) -> None:
    """events_cursor_after: its file by the files' Gtid_list events, then halving the file's offsets; reading back
    from the cursor lists the transaction among the first, in one big file and across several files, in a domain
    whose transactions are rare among another's."""
    write(mariadb, 1, 1500)
    write(mariadb, 1, 3, domain=9, table="u")
    write(mariadb, 1, 1500)
    mariadb.sql(1, "FLUSH BINARY LOGS")
    write(mariadb, 1, 1000)
    async with drivers(mariadb, events_tail_bytes=2000) as (master, *_):
        everything = (await master.recent_events(10_000)).transactions
        ones = sorted(t.seq_no for t in everything if t.domain == everything[0].domain)
        first_domain = everything[0].domain
        listed = counting_queries(master)

        def near(at: int, seq_no: int, domain: int) -> bool:
            """The cursor is past the transaction, in its file, by at most the halving's last 64 KiB and a
            boundary's slack."""
            tx = next(t for t in everything if t.domain == domain and t.seq_no == seq_no)
            file, offset = cursor_parts(at)
            return file == file_number(tx.file or "") and 0 < offset - (tx.offset or 0) <= 128 * 1024

        for wanted in (ones[10], ones[1200], ones[2600], ones[-5]):
            listed.clear()
            at = await master.events_cursor_after(first_domain, wanted)
            assert at is not None, wanted
            # Probes of a few events each (and a file's first ones), not the 16,000-odd events after it.
            read = sum(n for sql, n in listed if "LIMIT %s, 1" not in sql)
            assert read < 1_000, (wanted, listed)
            # Just past it: within the last halving's 64 KiB (some 280 of these transactions).
            page = await master.recent_events(400, domain=first_domain, before=at)
            assert wanted in [t.seq_no for t in page.transactions], (wanted, page.transactions[:3])
            assert near(at, wanted, first_domain)
        # A domain's transaction among long stretches of another's: the GTID state at each probe still says where.
        nine = sorted(t.seq_no for t in everything if t.domain == 9)
        at = await master.events_cursor_after(9, nine[1])
        assert at is not None and near(at, nine[1], 9)
        assert nine[1] in [t.seq_no for t in (await master.recent_events(2, domain=9, before=at)).transactions]


async def test_kill_sessions_bypassing_read_only_kills_users_whose_roles_bypass_it(mariadb: MariadbCluster) -> None:
    """READ ONLY ADMIN through a default role, SUPER through a role nested in another: both users' sessions can
    write despite read_only, so both are ended; a user with a harmless role keeps its session."""
    mariadb.sql(1, "SET SESSION sql_log_bin = 0; "
                   "CREATE ROLE bypass; GRANT READ_ONLY ADMIN ON *.* TO bypass; "
                   "CREATE USER ro_admin@'%' IDENTIFIED BY 'pw1'; GRANT bypass TO ro_admin@'%'; "
                   "SET DEFAULT ROLE bypass FOR ro_admin@'%'; "
                   "CREATE ROLE inner_role; GRANT SUPER ON *.* TO inner_role; "
                   "CREATE ROLE outer_role; GRANT inner_role TO outer_role; "
                   "CREATE USER nested@'%' IDENTIFIED BY 'pw2'; GRANT outer_role TO nested@'%'; "
                   "CREATE ROLE reader; GRANT SELECT ON app.* TO reader; "
                   "CREATE USER harmless@'%' IDENTIFIED BY 'pw3'; GRANT reader TO harmless@'%';")  # fmt: skip
    host, port = "127.0.0.1", mariadb.server(1).port
    sessions = {
        user: await aiomysql.connect(host=host, port=port, user=user, password=password, autocommit=True)
        for user, password in (("ro_admin", "pw1"), ("nested", "pw2"), ("harmless", "pw3"))
    }
    try:
        async with drivers(mariadb) as (master, _, _):
            assert await master.set_read_only(True)
            assert await master.kill_sessions_bypassing_read_only() == 2
            for user in ("ro_admin", "nested"):
                with pytest.raises(pymysql.err.OperationalError):
                    async with sessions[user].cursor() as c:
                        await c.execute("SELECT 1")
            async with sessions["harmless"].cursor() as c:
                await c.execute("SELECT 1")
            await master.set_read_only(False)
    finally:
        for session in sessions.values():
            session.close()


async def test_checksums_are_equal_across_servers_after_convergence(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 20)
    write(mariadb, 1, 5, domain=3, table="u")
    converged = mariadb.wait_converged()
    async with drivers(mariadb) as servers:
        sums = [await d.checksums() for d in servers]
    assert {s.position for s in sums} == {converged}
    assert sums[0].tables.keys() == {"app.t", "app.u"}
    assert sums[0].tables["app.t"].rows == 20 and sums[0].tables["app.u"].rows == 5
    assert sums[0].tables == sums[1].tables == sums[2].tables
    # Nothing written: no server has a GTID it did not have.
    assert {mariadb.value(s.number, "@@gtid_current_pos") for s in mariadb.servers} == {converged}


async def test_kill_sessions_bypassing_read_only_kills_super_users_only(mariadb: MariadbCluster) -> None:
    mariadb.sql(1, "SET SESSION sql_log_bin = 0; CREATE USER dba@'%' IDENTIFIED BY 'dbapw'; "
                   "GRANT ALL PRIVILEGES ON *.* TO dba@'%';")  # fmt: skip
    host, port = "127.0.0.1", mariadb.server(1).port
    dba = await aiomysql.connect(host=host, port=port, user="dba", password="dbapw", autocommit=True)
    app_user = mariadb.users.workload
    app = await aiomysql.connect(host=host, port=port, user=app_user.name, password=app_user.password, autocommit=True)
    try:
        async with drivers(mariadb) as (master, replica, _):
            assert await master.set_read_only(True)
            async with dba.cursor() as c:  # SUPER writes despite read_only: why its sessions must go
                await c.execute("CREATE TABLE app.bypass (id INT PRIMARY KEY)")
            assert await master.kill_sessions_bypassing_read_only() == 1
            with pytest.raises(pymysql.err.OperationalError):
                async with dba.cursor() as c:
                    await c.execute("INSERT INTO app.bypass VALUES (1)")
            async with app.cursor() as c:  # the workload user's session stays (read_only stops it anyway)
                await c.execute("SELECT 1")
            # Replication threads are spared: both replicas stay connected.
            assert {r.server_id for r in (await master.status()).replicas} == {2, 3}
            (c2,) = (await replica.status()).connections
            assert c2.io_state == IoState.connected
            assert await master.kill_sessions_bypassing_read_only() == 0
    finally:
        dba.close()
        app.close()


async def test_a_statement_whose_caller_gives_up_is_killed_on_the_server(mariadb: MariadbCluster) -> None:
    def sleeping() -> list[list[str]]:
        return mariadb.sql(
            2,
            "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(60) AS slept%' "
            "AND ID <> CONNECTION_ID()",
        )

    async with drivers(mariadb) as (_, replica, _):
        task = asyncio.create_task(replica.sql.query("SELECT SLEEP(60) AS slept", timeout_s=120))
        await eventually("the SLEEP(60) statement running on server 2", sleeping)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await replica.sql.kills_sent()
        await eventually("the SLEEP(60) statement gone from server 2's processlist", lambda: not sleeping())
        # The driver goes on working on fresh connections.
        assert (await replica.status()).server_id == 2

        # Server-side bound: the server interrupts the statement itself.
        with pytest.raises(StatementTimedOut) as timed_out:
            await replica.sql.query("SELECT SLEEP(60) AS slept", timeout_s=0.3)
        assert (timed_out.value.kind, timed_out.value.code) == (ErrorKind.timed_out, "1969")
        assert not sleeping()


async def test_server_errors_come_out_typed_with_the_servers_code_and_message(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 1)
    mariadb.wait_converged()
    # Wrong password.
    async with drivers(mariadb, admin=MariadbCredentials(mariadb.users.admin.name, "wrong")) as (master, *_):
        with pytest.raises(AccessDenied) as denied:
            await master.status()
        assert (denied.value.kind, denied.value.code) == (ErrorKind.unauthorized, "1045")
        assert "Access denied" in denied.value.message
    # Nothing listening.
    unreachable = MariadbDriver("127.0.0.1:1", driver(mariadb, 1).config)
    with pytest.raises(ServerUnreachable) as down:
        await unreachable.status()
    assert (down.value.kind, down.value.code) == (ErrorKind.unavailable, "2003")
    async with drivers(mariadb) as (_, replica, _):
        with pytest.raises(ReplicationRunning) as running:
            await replica.change_master("", ChangeMaster(master_address=mariadb.server(1).address, position="0-1-1"))
        assert (running.value.kind, running.value.code) == (ErrorKind.conflict, "1198")
        with pytest.raises(ReplicationNotConfigured):
            await replica.start_replication("nosuch")

    # A row the replica already has makes the master's insert fail there: the SQL thread stops on 1062.
    mariadb.sql(2, "SET SESSION sql_log_bin = 0; INSERT INTO app.t (id, v) VALUES (100, 'local');")
    mariadb.sql(1, "INSERT INTO app.t (id, v) VALUES (100, 'master');")
    async with drivers(mariadb) as (_, replica, _):

        async def sql_error() -> object:
            (c,) = (await replica.status()).connections
            return c if c.last_error is not None else None

        connection = await eventually("the replica's SQL thread stopped by a duplicate key", sql_error)
        assert connection.sql_state == SqlState.error and not connection.running
        assert connection.last_error.side == "sql" and connection.last_error.code == "1062"
        assert "Duplicate entry '100'" in connection.last_error.message
        # The driver names the failing transaction itself: the master's insert, the newest GTID of its binlog.
        assert connection.last_error.gtid in mariadb.value(1, "@@gtid_binlog_pos").split(","), connection.last_error


async def test_a_user_without_the_privilege_gets_a_typed_refusal_naming_it(mariadb: MariadbCluster) -> None:
    monitor_grants = "BINLOG MONITOR, SLAVE MONITOR, REPLICATION MASTER ADMIN, PROCESS"
    mariadb.sql(
        1,
        f"SET SESSION sql_log_bin = 0; CREATE USER watcher@'%' IDENTIFIED BY 'watchpw'; "
        f"GRANT {monitor_grants} ON *.* TO watcher@'%';",
    )
    async with drivers(mariadb, admin=MariadbCredentials("watcher", "watchpw")) as (master, *_):
        assert (await master.status()).server_id == 1  # monitoring needs no more
        with pytest.raises(PrivilegeMissing) as refused:
            await master.set_read_only(True)
        assert (refused.value.kind, refused.value.code) == (ErrorKind.forbidden, "1227")
        assert "READ_ONLY ADMIN" in refused.value.message


async def test_ferrys_user_holds_only_the_least_privilege(mariadb: MariadbCluster) -> None:
    user = mariadb.users.admin.name
    grants = "\n".join(row[0] for row in mariadb.sql(1, f"SHOW GRANTS FOR '{user}'@'%'"))
    assert "SUPER" not in grants and "ALL PRIVILEGES" not in grants and "WITH GRANT OPTION" not in grants
    for privilege in cluster_module.ADMIN_GRANTS.split(", "):
        assert privilege in grants, privilege
    assert f"GRANT INSERT, CREATE ON `{cluster_module.FERRY_SCHEMA}`.*" in grants
    replication = "\n".join(row[0] for row in mariadb.sql(1, f"SHOW GRANTS FOR '{mariadb.users.replication.name}'@'%'"))
    assert "GRANT REPLICATION SLAVE ON *.*" in replication and "," not in replication.split(" ON ")[0]


async def test_a_master_demoted_under_its_successor_with_the_least_privilege(mariadb: MariadbCluster) -> None:
    """The switchover's moves as Ferry's user: old master read-only, sessions killed, candidate caught up and
    promoted, old master demoted (MASTER_DEMOTE_TO_SLAVE), the other replica repointed; no errant GTID anywhere."""
    write(mariadb, 1, 3)
    mariadb.wait_converged()
    async with drivers(mariadb) as (old, new, other):
        await old.set_read_only(True)
        await old.kill_sessions_bypassing_read_only()
        target = (await old.positions()).binlog
        assert (await new.wait_for_position(target, 10.0)).reached
        await new.stop_replication("")
        await new.remove_replication("")
        assert await new.set_read_only(False) is False
        await old.change_master("", ChangeMaster(master_address=mariadb.server(2).address, use_gtid="current_pos"))
        await old.start_replication("")
        await other.stop_replication("")
        await other.change_master("", ChangeMaster(master_address=mariadb.server(2).address))
        await other.start_replication("")
        mariadb.links = [cluster_module.Link(1, 2), cluster_module.Link(3, 2)]
        write(mariadb, 2, 2)
        converged = mariadb.wait_converged()
        assert seq(converged, 0) > seq(target, 0) and by_domain(converged)[0].server == 2
        for d in (old, other):
            (c,) = (await d.status()).connections
            assert c.master_address == mariadb.server(2).address and c.io_state == IoState.connected
        state = (await new.positions()).binlog_state
        assert state == f"0-1-{seq(target, 0)},0-2-{seq(converged, 0)}"
        assert (await old.positions()).binlog_state == state


async def test_the_seed000_shape_has_a_multi_source_replica_of_two_domains(
    mariadb_factory: Callable[..., MariadbCluster],
) -> None:
    cluster = mariadb_factory(5, shape="seed000")
    write(cluster, 1, 3, table="from1")
    write(cluster, 2, 2, table="from2")
    converged = cluster.wait_converged()
    assert by_domain(converged).keys() == {1, 2}
    async with drivers(cluster) as (_, _, multi, below, _):
        status = await multi.status()
        assert [c.name for c in status.connections] == ["m1", "m2"]
        m1, m2 = status.connections
        assert m1.master_address == cluster.server(1).address and m2.master_address == cluster.server(2).address
        assert m1.applied_position == "1-1-4" and m2.applied_position == "2-2-3"
        assert all(c.running and c.io_state == IoState.connected for c in status.connections)
        assert status.positions.current == converged == "1-1-4,2-2-3"
        assert {r.server_id for r in status.replicas} == {4, 5}
        (c,) = (await below.status()).connections
        assert c.name == "" and c.master_address == cluster.server(3).address
        events = await multi.recent_events(100)
        assert {t.domain for t in events.transactions} == {1, 2}


def test_the_cluster_script_starts_and_stops_by_its_command_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "cli"
    assert cluster_module.main(["start", "--dir", str(root), "--servers", "2"]) == 0
    state = __import__("json").loads((root / "cluster.json").read_text())
    pids = [s["pid"] for s in state["servers"]]
    try:
        assert len(pids) == 2
        wait_until("both servers alive", lambda: all(cluster_module._is_ours(s["pid"], s["datadir"])
                                                     for s in state["servers"]))  # fmt: skip
    finally:
        assert cluster_module.main(["stop", "--dir", str(root)]) == 0
    assert not root.exists()
    assert not any(cluster_module._is_ours(s["pid"], s["datadir"]) and not cluster_module._zombie(s["pid"])
                   for s in state["servers"])  # fmt: skip


async def test_pools_give_the_drivers_of_one_server_and_login_one_pool(mariadb: MariadbCluster) -> None:
    pools = MariadbPools()
    config = driver(mariadb, 1).config
    try:
        first, second = pools.driver(mariadb.server(1).address, config), pools.driver(mariadb.server(1).address, config)
        other = pools.driver(mariadb.server(2).address, config)
        assert first.sql is second.sql and other.sql is not first.sql
        assert (await first.status()).server_id == 1 and (await other.status()).server_id == 2
        await first.aclose()  # a pooled driver leaves the pool to its owner
        assert (await second.status()).server_id == 1
        # New credentials for the server: a new pool, the old one's connections closed.
        users = mariadb.users
        changed = driver(mariadb, 1, admin=MariadbCredentials(users.workload.name, users.workload.password)).config
        third = pools.driver(mariadb.server(1).address, changed)
        assert third.sql is not first.sql and not first.sql._idle
        assert (await third.version()).startswith("10.11")
    finally:
        await pools.aclose()


async def test_long_reads_for_viewers_never_take_the_connections_kept_for_operations(mariadb: MariadbCluster) -> None:
    """Of a pool of 3, a long read (a binlog scan for the interleavings view) holds at most one connection: a
    second waits for it before taking any, and the collector's and an operation's statements run meanwhile."""
    async with drivers(mariadb, connections_max=3) as (master, *_):
        pool = master.sql
        holding = asyncio.Event()

        async def long_read() -> None:
            async with pool.heavy_read():
                holding.set()
                await pool.query("SELECT SLEEP(120)", timeout_s=120)

        first = asyncio.create_task(long_read())
        await asyncio.wait_for(holding.wait(), WAIT_S)
        second = asyncio.create_task(master.recent_events(5))
        await eventually("the second long read to wait for the first", lambda: pool._heavy._waiters)
        statuses = await asyncio.wait_for(asyncio.gather(master.status(), master.status()), WAIT_S)
        assert [s.server_id for s in statuses] == [1, 1]
        assert not second.done(), "the second long read waits for the first"
        first.cancel()
        assert (await asyncio.wait_for(second, WAIT_S)).transactions is not None
        with pytest.raises(asyncio.CancelledError):
            await first


async def test_a_server_that_stops_answering_is_unreachable_within_the_client_bound(mariadb: MariadbCluster) -> None:
    async with drivers(mariadb, statement_timeout_s=1.0, connect_timeout_s=1.0) as (_, replica, _):
        assert (await replica.status()).server_id == 2  # a pooled connection is open
        pid = mariadb.server(2).pid
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(ServerUnreachable) as hung:
                await replica.status()
            waited_s = time.monotonic() - started
            # The bound is 1 s on the server plus 1 s on the client; the slack is for a loaded machine.
            assert hung.value.code == "timeout" and waited_s < 10, (hung.value, waited_s)
            with pytest.raises(ServerUnreachable):  # a new connection cannot get an answer either
                await replica.status()
        finally:
            os.kill(pid, signal.SIGCONT)
        await replica.sql.kills_sent()
        assert (await replica.status()).server_id == 2


async def test_tls_with_the_servers_verified_against_a_ca(mariadb_factory: Callable[..., MariadbCluster]) -> None:
    cluster = mariadb_factory(2, tls=True)
    ca = (cluster.tls_dir / "ca.pem").read_text()
    async with drivers(cluster, tls_ca=ca) as (master, replica):
        assert (await master.status()).server_id == 1
        rows = await master.sql.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        assert rows[0]["Value"], f"the session is not encrypted: {rows}"
    async with drivers(cluster, tls_ca_file=str(cluster.tls_dir / "ca.pem")) as (master, _):
        assert (await master.status()).server_id == 1
    # A CA that did not sign the servers' certificate: refused before any login.
    other = cluster.tls_dir / "other-ca.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other",
         "-keyout", str(cluster.tls_dir / "other-key.pem"), "-out", str(other)],
        check=True, capture_output=True,
    )  # fmt: skip
    async with drivers(cluster, tls_ca_file=str(other)) as (master, _):
        with pytest.raises(ServerUnreachable) as refused:
            await master.status()
        assert refused.value.code == "tls" and "certificate verify failed" in refused.value.message


def test_a_config_of_a_clusters_stored_logins_needs_a_user() -> None:
    config = MariadbDriverConfig.of_login(
        "127.0.0.1:3306", user="ferry", password="pw", replication_user="repl", replication_password="rpw",
        tls_ca=None, connect_timeout_s=1.0, statement_timeout_s=5.0,
    )  # fmt: skip
    assert config.admin == MariadbCredentials("ferry", "pw") and config.replication == MariadbCredentials("repl", "rpw")
    assert "pw" not in repr(config)
    with pytest.raises(DriverError) as missing:
        MariadbDriverConfig.of_login(
            "127.0.0.1:3306", user=None, password=None, replication_user=None, replication_password=None,
            tls_ca=None, connect_timeout_s=1.0, statement_timeout_s=5.0,
        )  # fmt: skip
    assert missing.value.code == "no_db_credentials"


async def test_semi_sync_state_of_a_master_and_its_acknowledging_replicas(
    mariadb_factory: Callable[..., MariadbCluster],
) -> None:
    cluster = mariadb_factory(3, semi_sync=True)
    async with drivers(cluster) as (master, replica, _):

        async def acknowledged_by_both() -> object:
            state = await master.semi_sync_state()
            return state if state.master_clients == 2 else None

        state = await eventually("both replicas acknowledging the semi-sync master", acknowledged_by_both)
        assert state.master_enabled and state.master_active and state.master_wait_point == "AFTER_SYNC"
        assert state.master_timeout_ms == 10000
        write(cluster, 1, 2)
        assert (await master.semi_sync_state()).master_unacknowledged_commits == 0
        on_replica = await replica.semi_sync_state()
        assert on_replica.replica_enabled and on_replica.replica_active


async def test_the_factory_builds_mariadb_drivers_from_the_clusters_credentials(mariadb: MariadbCluster) -> None:
    users = mariadb.users
    credentials = ServerCredentials(
        db_user=users.admin.name, db_password=users.admin.password,
        replication_user=users.replication.name, replication_password=users.replication.password,
    )  # fmt: skip
    factory = DriverFactory(Settings(environment="development"))
    try:
        master = factory.for_address(ServerKind.mariadb, mariadb.server(1).address, credentials)
        assert master.kind == "mariadb" and (await master.status()).server_id == 1
        again = factory.for_address(ServerKind.mariadb, mariadb.server(1).address, credentials)
        assert isinstance(master, MariadbDriver) and isinstance(again, MariadbDriver) and again.sql is master.sql
        # CHANGE MASTER carries the replication login: a replica re-created through the factory replicates.
        replica = factory.for_address(ServerKind.mariadb, mariadb.server(3).address, credentials)
        await replica.remove_replication("")
        await replica.change_master("", ChangeMaster(master_address=mariadb.server(1).address))
        await replica.start_replication("")
        write(mariadb, 1, 1)
        assert (await replica.wait_for_position(mariadb.value(1, "@@gtid_binlog_pos"), 10.0)).reached
        with pytest.raises(DriverError) as no_login:
            factory.for_address(ServerKind.mariadb, mariadb.server(1).address)
        assert no_login.value.code == "no_db_credentials"
    finally:
        await factory.aclose()


async def test_replication_errors_1236_and_1950_show_in_status_with_the_servers_code(mariadb: MariadbCluster) -> None:
    write(mariadb, 1, 2)
    mariadb.wait_converged()
    async with drivers(mariadb) as (_, replica2, replica3):
        # 1236: asked for a position the master's binlog does not have.
        await replica2.stop_replication("")
        await replica2.change_master("", ChangeMaster(master_address=mariadb.server(1).address, position="0-1-999"))
        await replica2.start_replication("")

        async def io_error() -> object:
            (c,) = (await replica2.status()).connections
            return c.last_error if c.last_error is not None and c.last_error.side == "io" else None

        error = await eventually("the IO thread stopped by the master's 1236", io_error)
        assert error.code == "1236" and "binlog" in error.message.lower()
        (c,) = (await replica2.status()).connections
        assert c.io_state == IoState.error and not c.running

        # 1950: an errant local transaction on the replica (a SUPER user's write despite read_only), then the
        # master's next GTID in that domain is out of order for gtid_strict_mode.
        mariadb.sql(3, "INSERT INTO app.t (v) VALUES ('errant');")
        write(mariadb, 1, 1)

        async def sql_error() -> object:
            (c,) = (await replica3.status()).connections
            return c.last_error if c.last_error is not None and c.last_error.side == "sql" else None

        error = await eventually("the SQL thread stopped by gtid_strict_mode's 1950", sql_error)
        assert error.code == "1950" and "out-of-order" in error.message
        # The errant GTID is there per (domain, server_id) in gtid_binlog_state.
        assert "0-3-" in (await replica3.positions()).binlog_state
