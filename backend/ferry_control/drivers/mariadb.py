"""The `mariadb` driver: the driver interface over a real MariaDB 10.11 server's SQL (aiomysql; see
../shared/mariadb.md for the statements, columns and privileges it relies on).

It connects as Ferry's least-privilege monitor/admin user and gives replicas the replication user's credentials in
CHANGE MASTER. Every statement is bounded on the server and the client and killed when its caller gives up
(drivers/mariadb_connection.py). None of its statements writes a GTID: the FLUSH statements are NO_WRITE_TO_BINLOG,
and the rest (SET GLOBAL, CHANGE MASTER, START/STOP/RESET SLAVE, KILL, CHECKSUM TABLE) are never binlogged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace

import pymysql

from ferry_control.core.config import Settings
from ferry_control.core.gtid import Gtid, by_domain, canonical, canonical_state, covers, from_gtids
from ferry_control.drivers.base import (
    SEMI_SYNC_FALLEN_BACK,
    BinlogTransaction,
    ChangeMaster,
    Check,
    Checksums,
    ConnectionSettings,
    EventsPage,
    MasterRole,
    Positions,
    ReplicaConnection,
    ServerDriver,
    ServerStatus,
    Skipped,
    TableChecksum,
    WaitResult,
)
from ferry_control.drivers.errors import (
    DriverError,
    ErrorKind,
    ServerConflict,
    ServerProtocolError,
    ServerUnreachable,
    WriteOutcomeUnknown,
)
from ferry_control.drivers.kinds import KindRules
from ferry_control.drivers.mariadb_connection import MariadbConnections, PoolSettings
from ferry_control.drivers.mariadb_errors import (
    MariadbError,
    ReadOnly,
    ReplicationNotConfigured,
    ReplicationRunning,
    error_for,
)
from ferry_control.drivers.mariadb_sql import (
    CHANGE_MASTER_FILTERS,
    FILTER_COLUMNS,
    GTID_INFO,
    BinlogFileScan,
    connected_replica,
    cursor,
    cursor_parts,
    file_number,
    join_address,
    replica_connection,
    split_address,
)

#: The one round trip that reads a server's identity, flags and positions.
STATUS_VARIABLES = (
    "SELECT @@server_id AS server_id, @@gtid_domain_id AS domain_id, @@read_only AS read_only, @@log_bin AS log_bin, "
    "@@gtid_binlog_pos AS binlog_pos, @@gtid_slave_pos AS slave_pos, @@gtid_current_pos AS current_pos, "
    "@@gtid_binlog_state AS binlog_state, @@report_host AS report_host, @@report_port AS report_port, "
    "@@port AS port, @@version AS version, @@gtid_ignore_duplicates AS ignore_duplicates, "
    "@@slave_parallel_threads AS parallel_threads, @@slave_domain_parallel_threads AS domain_parallel_threads, "
    "@@rpl_semi_sync_slave_enabled AS semi_sync_replica, @@sync_binlog AS sync_binlog, "
    "@@rpl_semi_sync_master_enabled AS semi_sync_master, @@rpl_semi_sync_master_timeout AS semi_sync_timeout_ms, "
    "@@rpl_semi_sync_master_wait_point AS semi_sync_wait_point, "
    "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
    "WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_STATUS') AS semi_sync_master_status"
)
#: The server-wide variables a connection's settings include (read before changing them).
SERVER_SETTINGS = (
    "SELECT @@gtid_ignore_duplicates AS gtid_ignore_duplicates, @@slave_parallel_threads AS slave_parallel_threads, "
    "@@slave_domain_parallel_threads AS slave_domain_parallel_threads, "
    "@@rpl_semi_sync_slave_enabled AS rpl_semi_sync_slave_enabled"
)
#: Processlist commands of replication and server threads, never killed.
SERVER_THREAD_COMMANDS = frozenset(
    {"Binlog Dump", "Slave_IO", "Slave_SQL", "Slave_worker", "Daemon", "Connect", "Killed"}
)
#: Users the server runs its own threads as.
SERVER_THREAD_USERS = frozenset({"system user", "event_scheduler", "unauthenticated user"})
#: rpl_semi_sync_master_wait_point's values.
SEMI_SYNC_WAIT_POINTS = ("AFTER_SYNC", "AFTER_COMMIT")
#: Schemas that are the server's own, not user data (left out of checksums).
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
#: Global privileges the switchover's and failover's moves need of Ferry's user on a server that becomes master
#: (read positions and replicas, read-only off and on, CHANGE MASTER / START / STOP / RESET SLAVE, KILL sessions that
#: bypass read-only, FLUSH NO_WRITE_TO_BINLOG). ALL PRIVILEGES covers them; SUPER does not cover them all on 10.11+.
MOVE_PRIVILEGES = (
    "BINLOG MONITOR", "SLAVE MONITOR", "READ_ONLY ADMIN", "REPLICATION SLAVE ADMIN", "CONNECTION ADMIN", "RELOAD",
)  # fmt: skip
#: Ferry's own schema and its canary table (drills write one row per domain; Ferry's user has INSERT, CREATE there).
CANARY_SCHEMA = "ferry"
CANARY_TABLE = "canaries"
#: Events read per SHOW BINLOG EVENTS statement.
EVENTS_PAGE_ROWS = 5000
#: Relay log files read, at most, to find the transactions a stopped connection has yet to apply.
RELAY_FILES_MAX = 8
#: Binlog files whose scans are kept per server (the newest ones: recent events are read from the end).
SCANNED_FILES_KEPT = 4


@dataclass(frozen=True)
class MariadbCredentials:
    user: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class MariadbDriverConfig:
    """What the driver needs besides the server's address."""

    #: Ferry's monitor/admin user (least privilege: see scripts/mariadb_cluster.py ADMIN_GRANTS and mariadb.md).
    admin: MariadbCredentials
    #: Put into CHANGE MASTER so the replica can connect to its master (REPLICATION SLAVE only). Without it a
    #: CHANGE MASTER keeps the connection's existing user and password.
    replication: MariadbCredentials | None = None
    #: Verify the server's TLS certificate against this CA, a file or PEM text (neither: no TLS).
    tls_ca_file: str | None = None
    tls_ca: str | None = field(default=None, repr=False)
    connect_timeout_s: float = 3.0
    #: The server-side bound on an ordinary statement (longer waits carry their own bound).
    statement_timeout_s: float = 10.0
    #: Connections kept per server.
    connections_max: int = 3
    #: How often a position is re-read where the server has no wait of its own (a master), at most.
    position_poll_max_s: float = 0.1
    #: Bound on the binlog events one recent_events call reads (scans are kept, so a later call goes on from there).
    events_scan_max: int = 500_000
    #: Bound on the transactions kept of a server's binlog scans between calls (the newest files' are kept first).
    events_kept_max: int = 200_000
    #: How many times checksums are taken before giving up on a position that keeps moving.
    checksum_attempts: int = 5

    @classmethod
    def of_login(
        cls,
        address: str,
        *,
        user: str | None,
        password: str | None,
        replication_user: str | None,
        replication_password: str | None,
        tls_ca: str | None,
        connect_timeout_s: float,
        statement_timeout_s: float,
    ) -> MariadbDriverConfig:
        """The config from a cluster's stored logins (a driver factory's view of them); without a user for Ferry
        there is nothing to log in with."""
        if not user:
            raise DriverError(
                address, "no_db_credentials",
                "no database user is stored for this server's cluster (MariaDB needs one)",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        return cls(
            admin=MariadbCredentials(user, password or ""),
            replication=MariadbCredentials(replication_user, replication_password or "") if replication_user else None,
            tls_ca=tls_ca,
            connect_timeout_s=connect_timeout_s,
            statement_timeout_s=statement_timeout_s,
        )

    def connection_settings(self, address: str) -> PoolSettings:
        host, port = split_address(address)
        return PoolSettings(
            host=host, port=port, user=self.admin.user, password=self.admin.password, tls_ca_file=self.tls_ca_file,
            tls_ca=self.tls_ca,
            connect_timeout_s=self.connect_timeout_s, statement_timeout_s=self.statement_timeout_s,
            connections_max=self.connections_max,
        )  # fmt: skip


@dataclass(frozen=True)
class SemiSyncState:
    """A server's semi-synchronous replication, both roles (MariaDB's built-in semi-sync)."""

    #: rpl_semi_sync_master_enabled, and whether it is in effect now (Rpl_semi_sync_master_status: off after a
    #: timeout fell back to asynchronous until a replica catches up).
    master_enabled: bool
    master_active: bool
    #: Replicas acknowledging now (Rpl_semi_sync_master_clients).
    master_clients: int
    #: Commits that were not acknowledged in time (Rpl_semi_sync_master_no_tx).
    master_unacknowledged_commits: int
    #: How long a commit waits for an acknowledgement (rpl_semi_sync_master_timeout), and where (AFTER_SYNC or
    #: AFTER_COMMIT).
    master_timeout_ms: int
    master_wait_point: str
    #: rpl_semi_sync_slave_enabled, and whether this replica acknowledges now (Rpl_semi_sync_slave_status).
    replica_enabled: bool
    replica_active: bool


class MariadbRules(KindRules):
    """MariaDB servers: Ferry logs in with the cluster's stored db_user (nothing from the fleet's settings), over
    TLS only when the cluster stores a CA (tls_ca)."""

    kind = "mariadb"

    def plaintext(self, settings: Settings | None, secrets: Mapping[str, object]) -> bool:
        return secrets.get("db_user") is not None and secrets.get("tls_ca") is None


class MariadbPools:
    """One connection pool per (server, login), kept for the owner's life (a driver factory builds a driver per call;
    the pools make those drivers share connections). `aclose` closes them all."""

    def __init__(self) -> None:
        self._pools: dict[tuple[str, PoolSettings], MariadbConnections] = {}

    def driver(self, address: str, config: MariadbDriverConfig) -> MariadbDriver:
        settings = config.connection_settings(address)
        pool = self._pools.get((address, settings))
        if pool is None:
            # A new login for the server (its credentials changed): the old login's pool goes.
            for key in [k for k in self._pools if k[0] == address]:
                self._pools.pop(key).retire()
            pool = self._pools[(address, settings)] = MariadbConnections(address, settings)
        return MariadbDriver(address, config, pool)

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


log = logging.getLogger(__name__)

#: A global grant that lets a session write despite read_only.
BYPASSING_GRANT = re.compile(r"\bSUPER\b|\bREAD_ONLY ADMIN\b|\bALL PRIVILEGES\b")


class MariadbDriver(ServerDriver):
    """One MariaDB server at `address` (`host:port`, its SQL port). `connections` lets a factory share one pool per
    server between the drivers it builds; without it the driver has a pool of its own (closed by `aclose`)."""

    kind = "mariadb"

    def __init__(self, address: str, config: MariadbDriverConfig, connections: MariadbConnections | None = None):
        self.address = address
        self.config = config
        self._owns_connections = connections is None
        self.sql = connections or MariadbConnections(address, config.connection_settings(address))

    async def aclose(self) -> None:
        if self._owns_connections:
            await self.sql.aclose()

    # -- reads ---------------------------------------------------------------------------------------------------

    async def status(self) -> ServerStatus:
        rows = await self.sql.query(STATUS_VARIABLES)
        if not rows:
            raise ServerProtocolError(self.address, "no_status", "the status variables came back empty")
        v = rows[0]
        connections = await self.sql.query("SHOW ALL SLAVES STATUS")
        replicas = await self.sql.query("SHOW SLAVE HOSTS")
        files = await self.sql.query("SHOW BINARY LOGS") if int(v["log_bin"]) else []
        slave_pos = canonical(v["slave_pos"])
        report_host = v.get("report_host")
        return ServerStatus(
            server_id=int(v["server_id"]),
            read_only=bool(int(v["read_only"])),
            positions=Positions(
                binlog=canonical(v["binlog_pos"]),
                slave=slave_pos,
                current=canonical(v["current_pos"]),
                binlog_state=canonical_state(v["binlog_state"]),
            ),
            connections=tuple(
                sorted(
                    [
                        await self._with_failing_gtid(
                            replica_connection(row, slave_pos, len(connections), v), row, slave_pos
                        )
                        for row in connections
                    ],
                    key=lambda c: c.name,
                )
            ),  # fmt: skip
            replicas=tuple(sorted((connected_replica(row) for row in replicas), key=lambda r: r.server_id)),
            default_domain=int(v["domain_id"]),
            binlog_files=tuple(str(f["Log_name"]) for f in files),
            listen_address=join_address(report_host, int(v["report_port"] or v["port"])) if report_host else None,
            version=str(v["version"]),
            # The binlog is sent to replicas as it is written; only sync_binlog=1 makes it durable first.
            replicas_may_be_ahead=bool(int(v["log_bin"])) and int(v["sync_binlog"]) != 1,
            master_role=MasterRole(
                semi_sync=bool(int(v["semi_sync_master"])),
                semi_sync_timeout_ms=int(v["semi_sync_timeout_ms"]),
                semi_sync_wait_point=str(v["semi_sync_wait_point"]),
            ),
            # Semi-sync off while enabled, on a server clients write to (a replica has no commits to wait for).
            warnings=(SEMI_SYNC_FALLEN_BACK,)
            if int(v["semi_sync_master"])
            and not int(v["read_only"])
            and str(v["semi_sync_master_status"] or "").upper() == "OFF"
            else (),
        )

    async def _with_failing_gtid(
        self, connection: ReplicaConnection, row: Mapping[str, object], slave_pos: str
    ) -> ReplicaConnection:
        """The connection with its SQL error's failing GTID where MariaDB's message names only the failing event
        (`the event's master log F, end_log_pos P`, no `Gtid`): the transaction holding that event in the relay
        log. Left out (None) when the relay log does not have it: never a guess."""
        error = connection.last_error
        if error is None or error.side != "sql" or error.gtid is not None or failing_event(error.message) is None:
            return connection
        try:
            found = await self._relay_gtids(connection.name, row, by_domain(slave_pos), 1)
        except DriverError:
            return connection
        return replace(connection, last_error=replace(error, gtid=str(found[0]))) if found else connection

    async def positions(self) -> Positions:
        v = (await self.sql.query(STATUS_VARIABLES))[0]
        return Positions(
            binlog=canonical(v["binlog_pos"]),
            slave=canonical(v["slave_pos"]),
            current=canonical(v["current_pos"]),
            binlog_state=canonical_state(v["binlog_state"]),
        )

    async def semi_sync_state(self) -> SemiSyncState:
        """Semi-sync settings and status, both roles, in two statements (a MariaDB-only read: the driver interface
        has no semi-sync field yet)."""
        v = (
            await self.sql.query(
                "SELECT @@rpl_semi_sync_master_enabled AS master_enabled, "
                "@@rpl_semi_sync_master_timeout AS timeout_ms, @@rpl_semi_sync_master_wait_point AS wait_point, "
                "@@rpl_semi_sync_slave_enabled AS replica_enabled"
            )
        )[0]
        status = {
            str(row["Variable_name"]).lower(): str(row["Value"])
            for row in await self.sql.query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync%'")
        }
        return SemiSyncState(
            master_enabled=bool(int(v["master_enabled"])),
            master_active=status.get("rpl_semi_sync_master_status", "OFF") == "ON",
            master_clients=int(status.get("rpl_semi_sync_master_clients", 0)),
            master_unacknowledged_commits=int(status.get("rpl_semi_sync_master_no_tx", 0)),
            master_timeout_ms=int(v["timeout_ms"]),
            master_wait_point=str(v["wait_point"]),
            replica_enabled=bool(int(v["replica_enabled"])),
            replica_active=status.get("rpl_semi_sync_slave_status", "OFF") == "ON",
        )

    async def master_role(self) -> MasterRole:
        state = await self.semi_sync_state()
        return MasterRole(
            semi_sync=state.master_enabled,
            semi_sync_timeout_ms=state.master_timeout_ms,
            semi_sync_wait_point=state.master_wait_point,
        )

    async def take_master_role(self, role: MasterRole) -> MasterRole:
        """SET GLOBAL rpl_semi_sync_master_* (REPLICATION MASTER ADMIN): the timeout and wait point first, so
        commits never wait with the old ones once semi-sync is on."""
        before = await self.master_role()
        if role.semi_sync_timeout_ms is not None and role.semi_sync_timeout_ms != before.semi_sync_timeout_ms:
            await self.sql.query("SET GLOBAL rpl_semi_sync_master_timeout = %s", (role.semi_sync_timeout_ms,))
        if role.semi_sync_wait_point is not None and role.semi_sync_wait_point != before.semi_sync_wait_point:
            if role.semi_sync_wait_point not in SEMI_SYNC_WAIT_POINTS:
                raise DriverError(
                    self.address, "bad_wait_point", f"no wait point {role.semi_sync_wait_point!r}",
                    kind=ErrorKind.bad_request,
                )  # fmt: skip
            await self.sql.query("SET GLOBAL rpl_semi_sync_master_wait_point = %s", (role.semi_sync_wait_point,))
        if role.semi_sync is not None and role.semi_sync != before.semi_sync:
            await self.sql.query("SET GLOBAL rpl_semi_sync_master_enabled = %s", (int(role.semi_sync),))
        return before

    async def version(self) -> str:
        return str(await self.sql.value("SELECT @@version"))

    # -- replication changes -------------------------------------------------------------------------------------

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
        wanted_server = {"gtid_ignore_duplicates": int(settings.ignore_duplicates)}
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
        prefix = f"{_ident(connection)}." if connection else ""
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

    async def _relay_gtids(
        self, connection: str, row: Mapping[str, object], applied: Mapping[int, Gtid], count: int
    ) -> list[Gtid]:
        """The first `count` GTIDs the SQL thread has yet to apply, from its relay log position on (following the
        relay log into its next files), leaving out any it already has. When the SQL error names the event that
        failed (`the event's master log F, end_log_pos P`), the GTIDs start at the transaction holding that event —
        with parallel apply the relay position is the oldest transaction not committed, which may be another
        domain's, waiting (on a lock, say) when the error stopped everything — and a failing event not found there
        is a refusal (`failing_event_not_found`), never a guess."""
        failed_at = failing_event(str(row.get("Last_SQL_Error") or ""))
        pending: list[Gtid] = []  # unapplied, in relay order, from the relay position
        master_file: str | None = None
        anchor: int | None = None  # index in `pending` of the failing transaction, once found
        current: Gtid | None = None
        async for event in self._relay_events(connection, row):
            kind, info = str(event.get("Event_type")), str(event.get("Info") or "")
            match = GTID_INFO.match(info) if kind == "Gtid" else None
            if kind == "Rotate":
                master_file = info.split(";", 1)[0] or master_file
            elif match is not None:
                gtid = Gtid(int(match.group(1)), int(match.group(2)), int(match.group(3)))
                have = applied.get(gtid.domain)
                current = gtid if have is None or gtid.seq > have.seq else None
                if current is not None:
                    pending.append(current)
            elif (
                failed_at is not None and anchor is None and current is not None
                and str(event.get("End_log_pos")) == str(failed_at[1]) and master_file in (None, failed_at[0])
            ):  # fmt: skip
                anchor = len(pending) - 1
            if (failed_at is None or anchor is not None) and len(pending) - (anchor or 0) >= count:
                break
        if failed_at is not None and anchor is None:
            raise ServerConflict(
                self.address, "failing_event_not_found",
                f"the event the SQL error names ({failed_at[0]}, end_log_pos {failed_at[1]}) is not in connection "
                f"'{connection}''s relay log from its SQL position: nothing was skipped",
            )  # fmt: skip
        return pending[anchor or 0 :][:count]

    async def _relay_events(self, connection: str, row: Mapping[str, object]) -> AsyncIterator[Mapping[str, object]]:
        """The connection's relay log events from its SQL thread's position on, into the next files (at most
        RELAY_FILES_MAX), until the end of what was received."""
        file, pos = str(row.get("Relay_Log_File") or ""), int(str(row.get("Relay_Log_Pos") or 4))
        for _ in range(RELAY_FILES_MAX):
            # Paged by an offset from `pos` (a relay log event's End_log_pos is its master's binlog position).
            offset = 0
            while True:
                try:
                    events = await self.sql.query(
                        "SHOW RELAYLOG %s EVENTS IN %s FROM %s LIMIT %s, %s",
                        (connection, file, pos, offset, EVENTS_PAGE_ROWS),
                    )
                except MariadbError as e:
                    if e.errno == 1220:  # no such relay file: the end of what was received
                        return
                    raise
                for event in events:
                    yield event
                if len(events) < EVENTS_PAGE_ROWS:
                    break
                offset += len(events)
            file, pos = _next_file(file), 4

    async def remove_replication(self, connection: str) -> None:
        rows = await self.sql.query("SHOW SLAVE %s STATUS", (connection,))
        if any(row.get("Slave_IO_Running") != "No" or row.get("Slave_SQL_Running") != "No" for row in rows):
            await self.sql.query("STOP SLAVE %s", (connection,))
        await self.sql.query("RESET SLAVE %s ALL", (connection,))

    async def set_read_only(self, read_only: bool) -> bool:
        await self.sql.query("SET GLOBAL read_only = %s", (1 if read_only else 0,))
        return bool(int(await self.sql.value("SELECT @@read_only")))

    async def kill_sessions_bypassing_read_only(self) -> int:
        """Kills the client sessions of users whose privileges let them write despite read_only (SUPER or READ ONLY
        ADMIN, granted directly or through a role, however nested: a user may SET ROLE at any time), sparing
        replication and server threads and Ferry's own user. Returns how many were killed. Users are matched by
        name (a grant to `u`@`h` covers every session of `u`)."""
        grantees = await self.sql.query(
            "SELECT DISTINCT GRANTEE FROM information_schema.USER_PRIVILEGES "
            "WHERE PRIVILEGE_TYPE IN ('SUPER', 'READ_ONLY ADMIN')"
        )
        users = ({_grantee_user(str(g["GRANTEE"])) for g in grantees} | await self._users_with_bypassing_roles()) - {
            self.config.admin.user
        }
        if not users:
            return 0
        sessions = await self.sql.query(
            "SELECT ID, USER, COMMAND FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID()"
        )
        killed = 0
        for session in sessions:
            user, command = str(session["USER"]), str(session["COMMAND"])
            if user not in users or user in SERVER_THREAD_USERS or command in SERVER_THREAD_COMMANDS:
                continue
            try:
                await self.sql.query(f"KILL CONNECTION {int(session['ID'])}")
            except MariadbError as e:
                if e.errno != 1094:  # unknown thread: it ended meanwhile
                    raise
                continue
            killed += 1
        return killed

    async def _users_with_bypassing_roles(self) -> set[str]:
        """Users granted, directly or through other roles, a role that holds SUPER or READ ONLY ADMIN globally (the
        role grants in mysql.roles_mapping, each role's own grants by SHOW GRANTS)."""
        try:
            rows = await self.sql.query("SELECT User, Host, Role FROM mysql.roles_mapping")
        except MariadbError as e:
            if e.errno not in (1142, 1044, 1227):  # not "access denied"
                raise
            log.warning("%s: Ferry's user cannot read the role grants (%s): sessions whose SUPER or READ ONLY "
                        "ADMIN comes through a role are not ended", self.address, e.message)  # fmt: skip
            return set()
        mapping = [(str(r["User"]), str(r["Host"]), str(r["Role"])) for r in rows]
        roles = {role for _, _, role in mapping}
        bypassing = set()
        for role in roles:
            grants = [str(next(iter(row.values()))) for row in await self.sql.query("SHOW GRANTS FOR %s", (role,))]
            if any(" ON *.* " in g and BYPASSING_GRANT.search(g) for g in grants):
                bypassing.add(role)
        # A role granted a bypassing role bypasses too; then every user granted any of them.
        changed = True
        while changed:
            changed = False
            for grantee, host, role in mapping:
                if host == "" and grantee in roles and role in bypassing and grantee not in bypassing:
                    bypassing.add(grantee)
                    changed = True
        return {grantee for grantee, host, role in mapping if host != "" and role in bypassing}

    # -- preflight -----------------------------------------------------------------------------------------------

    async def replication_checks(self) -> list[Check]:
        """What this server needs to become a master others follow by GTID: log_bin, log_slave_updates (what it
        replicated is in its binlog), gtid_strict_mode, binlog_format=ROW, Ferry's privileges for the moves
        (MOVE_PRIVILEGES), and the replication login: the user exists here and logs in with the stored password
        and holds REPLICATION SLAVE (replicas will connect to this server with it)."""
        v = (
            await self.sql.query(
                "SELECT @@log_bin AS log_bin, @@log_slave_updates AS log_slave_updates, "
                "@@gtid_strict_mode AS gtid_strict_mode, @@binlog_format AS binlog_format"
            )
        )[0]
        checks = [
            _flag_check("log_bin", v["log_bin"], "its binlog is what replicas read"),
            _flag_check("log_slave_updates", v["log_slave_updates"], "what it replicated is in its binlog"),
            _flag_check("gtid_strict_mode", v["gtid_strict_mode"], "out-of-order GTIDs are refused, not applied"),
        ]
        fmt = str(v["binlog_format"])
        checks.append(Check("binlog_format", fmt == "ROW", f"binlog_format={fmt}" + ("" if fmt == "ROW" else
                                                                                     " (ROW needed)")))  # fmt: skip
        grants = [str(next(iter(r.values()))) for r in await self.sql.query("SHOW GRANTS FOR CURRENT_USER()")]
        held = _global_privileges(grants)
        missing = [p for p in MOVE_PRIVILEGES if "ALL PRIVILEGES" not in held and p not in held]
        checks.append(
            Check(
                "ferry_privileges",
                not missing,
                f"{self.config.admin.user} holds {', '.join(MOVE_PRIVILEGES)}"
                if not missing
                else f"{self.config.admin.user} lacks {', '.join(missing)} (needed to move the master)",
            )
        )
        checks += await self._replication_login_checks()
        return checks

    async def _replication_login_checks(self) -> list[Check]:
        login = self.config.replication
        if login is None:
            return [Check("replication_user_present", False, "no replication user is stored for the cluster")]
        present = int(
            await self.sql.value("SELECT COUNT(*) FROM mysql.global_priv WHERE User = %s", (login.user,)) or 0
        )
        checks = [
            Check(
                "replication_user_present",
                present > 0,
                f"user {login.user!r} exists" if present else f"no user {login.user!r} on this server",
            )
        ]
        settings = self.sql.settings
        probe = MariadbConnections(
            self.address,
            PoolSettings(
                host=settings.host, port=settings.port, user=login.user, password=login.password,
                tls_ca_file=settings.tls_ca_file, tls_ca=settings.tls_ca,
                connect_timeout_s=settings.connect_timeout_s, statement_timeout_s=settings.statement_timeout_s,
                connections_max=1,
            ),
        )  # fmt: skip
        try:
            grants = [str(next(iter(r.values()))) for r in await probe.query("SHOW GRANTS FOR CURRENT_USER()")]
        except DriverError as e:
            checks.append(Check("replication_login", False, f"{login.user!r} cannot log in: {e.code}: {e.message}"))
            return checks
        finally:
            await probe.aclose()
        held = _global_privileges(grants)
        ok = "REPLICATION SLAVE" in held or "ALL PRIVILEGES" in held
        checks.append(
            Check(
                "replication_login",
                ok,
                f"{login.user!r} logs in and holds REPLICATION SLAVE"
                if ok
                else f"{login.user!r} logs in but lacks REPLICATION SLAVE",
            )
        )
        return checks

    # -- canaries ------------------------------------------------------------------------------------------------

    async def write_canary(self, domain: int, key: str, fields: Mapping[str, object]) -> str:
        """INSERT into ferry.canaries (created when missing) in GTID domain `domain` (SET SESSION gtid_domain_id:
        Ferry's user needs BINLOG REPLAY for it) on one connection of its own, and the GTID it got (@@last_gtid).

        Ferry's user holds READ ONLY ADMIN (for the moves), which read_only does not stop: so the write checks
        @@global.read_only inside its transaction, just before COMMIT, and refuses itself as the server would
        (`ReadOnly`, 1290) — a canary never lands on a read-only master. Only a connection lost once COMMIT was sent
        leaves the outcome unknown (`WriteOutcomeUnknown`)."""
        table = f"{_ident(CANARY_SCHEMA)}.{_ident(CANARY_TABLE)}"
        exists = await self.sql.value(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (CANARY_SCHEMA, CANARY_TABLE),
        )
        conn = await self.sql.connect()
        committing = False
        try:
            async with asyncio.timeout(self.config.statement_timeout_s + 1.0):
                async with conn.cursor() as cur:
                    if not int(exists or 0):
                        await cur.execute(
                            f"CREATE TABLE IF NOT EXISTS {table} (name VARCHAR(191) NOT NULL PRIMARY KEY, "
                            "body TEXT NOT NULL, written_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"
                        )
                    await cur.execute("SET SESSION gtid_domain_id = %s", (int(domain),))
                    await cur.execute("START TRANSACTION")
                    await cur.execute(f"INSERT INTO {table} (name, body) VALUES (%s, %s)", (key, json.dumps(fields)))
                    await cur.execute("SELECT @@global.read_only")
                    read_only = await cur.fetchone()
                    if read_only and int(read_only[0]):
                        await cur.execute("ROLLBACK")
                        raise ReadOnly(self.address, 1290, "the server is read-only: the canary was not written")
                    committing = True
                    await cur.execute("COMMIT")
                    await cur.execute("SELECT @@last_gtid")
                    row = await cur.fetchone()
        except TimeoutError as e:
            error = WriteOutcomeUnknown if committing else ServerUnreachable
            raise error(self.address, "timeout", f"canary write of {key!r} did not finish") from e
        except pymysql.err.MySQLError as e:  # mapped like every other statement's error
            errno = e.args[0] if e.args and isinstance(e.args[0], int) else 2013
            mapped = error_for(self.address, errno, str(e.args[1]) if len(e.args) > 1 else str(e))
            if committing and isinstance(mapped, ServerUnreachable):
                raise WriteOutcomeUnknown(self.address, mapped.code, mapped.message) from e
            raise mapped from e
        finally:
            conn.close()
        gtid = str(row[0]) if row else ""
        if not gtid:
            raise ServerProtocolError(self.address, "no_gtid", f"the canary {key!r} was written without a GTID")
        return gtid

    async def read_canaries(self, keys: list[str]) -> dict[str, dict[str, object] | None]:
        found: dict[str, dict[str, object] | None] = dict.fromkeys(keys)
        if not keys:
            return found
        try:
            rows = await self.sql.query(
                f"SELECT name, body FROM {_ident(CANARY_SCHEMA)}.{_ident(CANARY_TABLE)} "
                f"WHERE name IN ({', '.join(['%s'] * len(keys))})",
                tuple(keys),
            )
        except MariadbError as e:
            if e.errno == 1146:  # no canary table yet: no canary
                return found
            raise
        for row in rows:
            found[str(row["name"])] = json.loads(row["body"])
        return found

    # -- waits ---------------------------------------------------------------------------------------------------

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

    # -- binlog events -------------------------------------------------------------------------------------------

    async def recent_events(self, limit: int, domain: int | None = None, before: int | None = None) -> EventsPage:
        """The newest transactions (GTID events with their commit ids and tables) before the cursor `before` (a
        binlog file number and offset in one integer), newest first, read with SHOW BINLOG EVENTS page by page from
        the newest files back. Scans of each file are kept for the server, so later calls read only what is new."""
        if limit <= 0:
            return EventsPage((), None)
        async with self.sql.heavy_read():
            return await self._recent_events(limit, domain, before)

    async def _recent_events(self, limit: int, domain: int | None, before: int | None) -> EventsPage:
        files = [str(f["Log_name"]) for f in await self.sql.query("SHOW BINARY LOGS")]
        end_file, end_offset = cursor_parts(before) if before is not None else (None, None)
        budget = [self.config.events_scan_max]
        found: list[BinlogTransaction] = []
        try:
            for file in reversed(files):
                number = file_number(file)
                if end_file is not None and number > end_file:
                    continue
                scan = await self._scan(file, budget)
                for tx in reversed(scan.transactions):
                    if end_file is not None and number == end_file and (tx.offset or 0) >= (end_offset or 0):
                        continue
                    if domain is not None and tx.domain != domain:
                        continue
                    found.append(tx)
                    if len(found) == limit:
                        break
                if len(found) == limit:
                    break
        finally:  # also when a scan stopped at its bound or failed: what is kept stays bounded
            self._forget_old_scans(files)
        next_before = None
        if len(found) == limit:
            oldest = found[-1]
            next_before = cursor(oldest.file or "", oldest.offset or 0)
        return EventsPage(tuple(found), next_before)

    async def _scan(self, file: str, budget: list[int]) -> BinlogFileScan:
        """The file's scan brought up to its end, continuing a kept one when its last transaction is still where it
        was (a RESET MASTER reuses file names)."""
        scans: dict[str, BinlogFileScan] = self.sql.binlog_scans
        scan = scans.get(file)
        if scan is not None and scan.transactions:
            last = scan.transactions[-1]
            rows = await self.sql.query("SHOW BINLOG EVENTS IN %s FROM %s LIMIT 1", (file, last.offset))
            if not rows or f"GTID {last.gtid}" not in str(rows[0].get("Info") or ""):
                scan = None
        if scan is None:
            scan = BinlogFileScan(file)
        while True:
            if budget[0] <= 0:
                scans[file] = scan
                raise DriverError(
                    self.address, "events_scan_limit",
                    f"read {self.config.events_scan_max} binlog events without reaching the end of {file}; "
                    "the next call goes on from there",
                )  # fmt: skip
            page = min(EVENTS_PAGE_ROWS, budget[0])
            try:
                rows = await self.sql.query("SHOW BINLOG EVENTS IN %s FROM %s LIMIT %s", (file, scan.next_pos, page))
            except MariadbError as e:
                if e.errno == 1220 and scan.next_pos > 4:  # the kept position is no event boundary any more
                    scan = BinlogFileScan(file)
                    continue
                raise
            budget[0] -= len(rows)
            scan.feed(rows)
            if len(rows) < page:
                break
        scans[file] = scan
        return scan

    def _forget_old_scans(self, files: list[str]) -> None:
        """Keeps the scans of the newest SCANNED_FILES_KEPT files, and of those only as many, newest first, as hold
        at most events_kept_max transactions together (the newest file's always)."""
        scans: dict[str, BinlogFileScan] = self.sql.binlog_scans
        kept = 0
        for rank, file in enumerate(sorted(scans, key=file_number, reverse=True)):
            kept += len(scans[file].transactions)
            if file not in files or rank >= SCANNED_FILES_KEPT or (rank > 0 and kept > self.config.events_kept_max):
                del scans[file]

    # -- checksums -----------------------------------------------------------------------------------------------

    async def checksums(self) -> Checksums:
        """CHECKSUM TABLE and a row count of every user table, between two reads of @@gtid_current_pos that must
        agree (else taken again, a bounded number of times): the checksums then belong to that position. Writes
        nothing, locks nothing: a server whose position keeps moving (a master under load) gives an error."""
        tables = await self.sql.query(
            "SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
            f"AND TABLE_SCHEMA NOT IN ({', '.join(repr(s) for s in SYSTEM_SCHEMAS)}) ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        names = {f"{t['s']}.{t['t']}": f"{_ident(str(t['s']))}.{_ident(str(t['t']))}" for t in tables}
        for _ in range(self.config.checksum_attempts):
            before = canonical(await self.sql.value("SELECT @@gtid_current_pos"))
            sums: dict[str, TableChecksum] = {}
            if names:
                checks = await self.sql.query(f"CHECKSUM TABLE {', '.join(names.values())}")
                counts = await self.sql.query(
                    " UNION ALL ".join(f"SELECT {_literal(name)} AS t, COUNT(*) AS n FROM {quoted}"
                                       for name, quoted in names.items())
                )  # fmt: skip
                rows_by_name = {str(c["t"]): int(c["n"]) for c in counts}
                for check in checks:
                    name = str(check["Table"])
                    if check.get("Checksum") is None:
                        raise ServerProtocolError(self.address, "no_checksum", f"CHECKSUM TABLE gave none for {name}")
                    sums[name] = TableChecksum(rows=rows_by_name.get(name, 0), checksum=int(check["Checksum"]))
            after = canonical(await self.sql.value("SELECT @@gtid_current_pos"))
            if before == after:
                return Checksums(position=after, tables=sums)
        raise DriverError(
            self.address, "position_moving",
            f"@@gtid_current_pos moved during each of {self.config.checksum_attempts} checksum attempts",
        )  # fmt: skip


#: Where a SQL error says the failing event was: `the event's master log binlog.000001, end_log_pos 652`.
FAILING_EVENT = re.compile(r"the event's master log ([^,\s]+), end_log_pos (\d+)")


def failing_event(error: str) -> tuple[str, int] | None:
    """The master binlog file and end position of the event a SQL error names, if it names one."""
    match = FAILING_EVENT.search(error)
    return (match.group(1), int(match.group(2))) if match else None


def _next_file(name: str) -> str:
    """The relay (or binlog) file after `name`: `relay-bin.000007` → `relay-bin.000008`."""
    stem, _, number = name.rpartition(".")
    return f"{stem}.{int(number) + 1:0{len(number)}d}"


def _flag_check(name: str, value: object, why: str) -> Check:
    on = str(value).upper() in ("1", "ON")
    return Check(name, on, f"{name}={'ON' if on else 'OFF'}" + ("" if on else f" (must be ON: {why})"))


def _global_privileges(grants: list[str]) -> set[str]:
    """The privileges `GRANT … ON *.* TO …` lines give (upper case, as SHOW GRANTS spells them)."""
    held: set[str] = set()
    for grant in grants:
        if not grant.startswith("GRANT ") or " ON *.* TO " not in grant:
            continue
        held |= {p.strip().upper() for p in grant[len("GRANT ") : grant.index(" ON *.* TO ")].split(",")}
    return held


def _grantee_user(grantee: str) -> str:
    """`'user'@'host'` → user."""
    user = grantee.rsplit("@", 1)[0]
    return user[1:-1].replace("''", "'") if user.startswith("'") and user.endswith("'") else user


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
