"""Replication control on a MariaDB server: CHANGE MASTER (with the connection's settings), START / STOP / RESET
SLAVE, skipping transactions by GTID, and waiting for a position (MASTER_GTID_WAIT)."""

from __future__ import annotations

import asyncio
import time

from ferry_control.core.gtid import by_domain, canonical, covers, from_gtids
from ferry_control.drivers.base import ChangeMaster, ConnectionSettings, Skipped, WaitResult
from ferry_control.drivers.errors import DriverError, ErrorKind, ServerConflict
from ferry_control.drivers.mariadb.connection import quote_ident
from ferry_control.drivers.mariadb.errors import ReplicationNotConfigured, ReplicationRunning
from ferry_control.drivers.mariadb.relay import MariadbRelayLog
from ferry_control.drivers.mariadb.rows import CHANGE_MASTER_FILTERS, FILTER_COLUMNS, split_address

#: The server-wide variables a connection's settings include (read before changing them).
SERVER_SETTINGS = (
    "SELECT @@gtid_ignore_duplicates AS gtid_ignore_duplicates, @@slave_parallel_threads AS slave_parallel_threads, "
    "@@slave_domain_parallel_threads AS slave_domain_parallel_threads, "
    "@@rpl_semi_sync_slave_enabled AS rpl_semi_sync_slave_enabled"
)


class MariadbReplication(MariadbRelayLog):
    """Changes to the server's replication connections, and waits."""

    async def change_master(self, connection: str, change: ChangeMaster) -> None:
        """CHANGE MASTER 'connection' TO …. An explicit `position` first becomes @@gtid_slave_pos (the server
        refuses with 1198 while any connection runs). `use_gtid="current_pos"` (a demoted master joining its
        successor) becomes `MASTER_USE_GTID=slave_pos, MASTER_DEMOTE_TO_SLAVE=1`, the 10.10+ form that folds the
        server's own binlog position into its slave position (current_pos itself is deprecated).

        `change.settings`, when given, are taken back whole: delay, heartbeat, the domain and server id filters (in
        CHANGE MASTER), the connection's parallel mode and table/database filters (its prefixed variables), and
        the server-wide gtid_ignore_duplicates, slave_parallel_threads, slave_domain_parallel_threads and
        rpl_semi_sync_slave_enabled where they are set (those need every connection stopped or apply to all)."""
        host, port = split_address(change.master_address)
        settings = change.settings or ConnectionSettings(
            delay_s=change.delay_s, ignore_duplicates=change.ignore_duplicates, heartbeat_ms=change.heartbeat_ms
        )
        options = ["MASTER_HOST = %s", "MASTER_PORT = %s"]
        args: list[object] = [host, port]
        if self.config.replication is not None:
            options += ["MASTER_USER = %s", "MASTER_PASSWORD = %s"]
            args += [self.config.replication.user, self.config.replication.password]
        if change.file is not None:
            options += ["MASTER_LOG_FILE = %s", "MASTER_LOG_POS = %s", "MASTER_USE_GTID = no"]
            args += [change.file, int(change.offset or 4)]
        elif change.use_gtid == "current_pos":
            options += ["MASTER_USE_GTID = slave_pos", "MASTER_DEMOTE_TO_SLAVE = 1"]
        else:
            options.append("MASTER_USE_GTID = slave_pos")
        options.append("MASTER_DELAY = %s")
        args.append(int(settings.delay_s))
        if settings.heartbeat_ms is not None:
            options.append("MASTER_HEARTBEAT_PERIOD = %s")
            args.append(round(settings.heartbeat_ms / 1000, 3))
        unknown = set(settings.filters) - set(FILTER_COLUMNS.values())
        if unknown:
            raise DriverError(
                self.address, "unknown_filter", f"no such MariaDB replication filter: {sorted(unknown)}",
                kind=ErrorKind.bad_request,
            )  # fmt: skip
        if change.settings is not None:
            for name in CHANGE_MASTER_FILTERS:
                ids = settings.filter_ids(name)
                options.append(f"{name.upper()} = ({', '.join(str(i) for i in ids)})")
        if change.position is not None:
            await self.sql.query("SET GLOBAL gtid_slave_pos = %s", (canonical(change.position),))
        server = (await self.sql.query(SERVER_SETTINGS))[0]
        wanted_server: dict[str, int | None] = {"gtid_ignore_duplicates": int(settings.ignore_duplicates)}
        if change.settings is not None:
            wanted_server |= {
                "slave_parallel_threads": settings.workers,
                "slave_domain_parallel_threads": settings.domain_workers_max,
                "rpl_semi_sync_slave_enabled": None
                if settings.semi_sync_replica is None
                else int(settings.semi_sync_replica),
            }
        elif not change.ignore_duplicates:
            wanted_server = {}
        # Server-wide: set only where it differs (slave_parallel_threads needs every connection stopped).
        for variable, value in wanted_server.items():
            if value is not None and int(server[variable]) != int(value):
                await self.sql.query(f"SET GLOBAL {variable} = %s", (int(value),))
        await self.sql.query(f"CHANGE MASTER %s TO {', '.join(options)}", (connection, *args))
        if change.settings is not None:
            await self._set_connection_variables(connection, settings)

    async def _set_connection_variables(self, connection: str, settings: ConnectionSettings) -> None:
        """The connection's parallel mode and database/table filters (its `name`.variable globals), where they
        differ from what it has."""
        (row,) = await self.sql.query("SHOW SLAVE %s STATUS", (connection,))
        have = {name: str(row.get(column) or "").strip() for column, name in FILTER_COLUMNS.items()}
        wanted = {name: settings.filters.get(name, "") for name in FILTER_COLUMNS.values()
                  if name not in CHANGE_MASTER_FILTERS}  # fmt: skip
        if settings.parallel_mode is not None:
            wanted["slave_parallel_mode"] = settings.parallel_mode
            have["slave_parallel_mode"] = str(row.get("Parallel_Mode") or "")
        prefix = f"{quote_ident(connection)}." if connection else ""
        for name, value in wanted.items():
            if have.get(name) != value:
                await self.sql.query(f"SET GLOBAL {prefix}{name} = %s", (value,))

    async def start_replication(self, connection: str, until: str | None = None) -> None:
        if until is None:
            await self.sql.query("START SLAVE %s", (connection,))
        else:
            await self.sql.query("START SLAVE %s UNTIL master_gtid_pos = %s", (connection, canonical(until)))

    async def stop_replication(self, connection: str) -> None:
        await self.sql.query("STOP SLAVE %s", (connection,))

    async def skip_transactions(self, connection: str, count: int) -> Skipped:
        """Skips the next `count` transactions of the stopped `connection` the way MariaDB advises with GTID: their
        GTIDs are read from the connection's relay log where its SQL thread stopped (SHOW RELAYLOG 'c' EVENTS — the
        transaction that failed first), the connection is stopped (its IO thread too) and @@gtid_slave_pos is set
        past them, so its next start fetches from the master what follows them. The same transactions as
        `SET GLOBAL sql_slave_skip_counter = count` passes over for one domain, without its limits: that variable
        needs SUPER (REPLICATION SLAVE ADMIN does not cover it on 10.11), and with parallel replication it is
        refused when gtid_slave_pos has several domains (1966).

        MariaDB takes a new @@gtid_slave_pos only with every connection stopped: on a multi-source replica the
        other running connections are stopped for that moment and started again (`Skipped.paused` names them;
        each restarts from gtid_slave_pos, which the skip changes only in the skipped transactions' domains, read
        again once they are stopped, so a busy other connection's domain never moves back).

        Refusals: 1198 `ReplicationRunning` while the SQL thread runs (the server's own words); 1617 for no such
        connection; `not_received` when fewer than `count` transactions are in the relay log."""
        rows = await self.sql.query("SHOW SLAVE %s STATUS", (connection,))
        if not rows:
            raise ReplicationNotConfigured(self.address, 1617, f"There is no master connection '{connection}'")
        row = rows[0]
        if str(row.get("Slave_SQL_Running")) == "Yes":
            raise ReplicationRunning(
                self.address, 1198,
                f"This operation cannot be performed as you have a running slave '{connection}'; run STOP SLAVE "
                f"'{connection}' first",
            )  # fmt: skip
        if count <= 0:
            return Skipped(gtids=(), pending=False)
        applied = by_domain(await self.sql.value("SELECT @@gtid_slave_pos"))
        gtids = await self._relay_gtids(connection, row, applied, count)
        if len(gtids) < count:
            raise ServerConflict(
                self.address, "not_received",
                f"connection '{connection}' has received {len(gtids)} transaction(s) it has not applied, not "
                f"{count}: nothing was skipped",
            )  # fmt: skip
        receiving = str(row.get("Slave_IO_Running")) != "No"
        if receiving:
            await self.sql.query("STOP SLAVE %s", (connection,))
        others = [
            str(r.get("Connection_name") or "")
            for r in await self.sql.query("SHOW ALL SLAVES STATUS")
            if str(r.get("Connection_name") or "") != connection
            and (str(r.get("Slave_IO_Running")) != "No" or str(r.get("Slave_SQL_Running")) == "Yes")
        ]
        for name in others:
            await self.sql.query("STOP SLAVE %s", (name,))
        # Read again now that nothing applies: the other connections went on applying their domains until they
        # stopped, and writing back the position read before would move their domains back (re-applied rows).
        # Only the skipped transactions' domains change, and never backwards.
        now = by_domain(await self.sql.value("SELECT @@gtid_slave_pos"))
        for gtid in gtids:
            have = now.get(gtid.domain)
            if have is None or gtid.seq > have.seq:
                now[gtid.domain] = gtid
        try:
            await self.sql.query("SET GLOBAL gtid_slave_pos = %s", (str(from_gtids(now.values())),))
        except ReplicationRunning:
            if receiving:
                await self.sql.query("START SLAVE %s IO_THREAD", (connection,))
            raise
        finally:
            for name in others:
                await self.sql.query("START SLAVE %s", (name,))
        return Skipped(gtids=tuple(str(g) for g in gtids), pending=False, source="the relay log", paused=tuple(others))

    async def remove_replication(self, connection: str) -> None:
        """RESET SLAVE 'c' ALL; a connection still running (1198) is stopped first. A stopped one (a move's promotion
        stops it just before) goes in one round trip."""
        try:
            await self.sql.query("RESET SLAVE %s ALL", (connection,))
        except ReplicationRunning:
            await self.sql.query("STOP SLAVE %s", (connection,))
            await self.sql.query("RESET SLAVE %s ALL", (connection,))

    async def wait_for_position(self, position: str, timeout_s: float) -> WaitResult:
        """On a replica, MASTER_GTID_WAIT (it waits on gtid_slave_pos) for the domains its current position does
        not yet cover; elsewhere (a master, whose binlog position the function never waits on) @@gtid_current_pos
        is polled. Either way the wait is bounded by `timeout_s`."""
        want = canonical(position)
        deadline = time.monotonic() + max(timeout_s, 0.0)
        current = canonical(await self.sql.value("SELECT @@gtid_current_pos"))
        if covers(current, want):
            return WaitResult(True, current)
        have = by_domain(current)
        missing = str(
            from_gtids(g for g in by_domain(want).values() if g.domain not in have or have[g.domain].seq < g.seq)
        )
        connections = await self.sql.query("SHOW ALL SLAVES STATUS")
        left = deadline - time.monotonic()
        if connections and left > 0:
            await self.sql.query("SELECT MASTER_GTID_WAIT(%s, %s) AS waited", (missing, round(left, 3)),
                                 timeout_s=left + 1.0)  # fmt: skip
            current = canonical(await self.sql.value("SELECT @@gtid_current_pos"))
            return WaitResult(covers(current, want), current)
        interval = 0.005
        while True:
            current = canonical(await self.sql.value("SELECT @@gtid_current_pos"))
            if covers(current, want):
                return WaitResult(True, current)
            left = deadline - time.monotonic()
            if left <= 0:
                return WaitResult(False, current)
            interval = min(interval * 2, self.config.position_poll_max_s)
            await asyncio.sleep(min(interval, left))
