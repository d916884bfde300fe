"""What the `mariadb` driver reads, turned into the driver interface's types, without I/O: SHOW ALL SLAVES STATUS
rows → ReplicaConnection, SHOW SLAVE HOSTS rows → ConnectedReplica, SHOW BINLOG EVENTS rows → BinlogTransaction, and
the event cursor (binlog file number and offset in one integer). GTID text is read by core/gtid.py, the control
plane's one GTID vocabulary."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ferry_control.core.gtid import by_domain, canonical, from_gtids, position
from ferry_control.drivers.base import (
    BinlogTransaction,
    ConnectedReplica,
    ConnectionSettings,
    DomainLag,
    IoState,
    ReplicaConnection,
    ReplicationError,
    SqlState,
)

#: A GTID event's Info in SHOW BINLOG EVENTS (`BEGIN GTID 0-1-5 cid=12`, or `GTID 0-1-6` for DDL).
GTID_INFO = re.compile(r"^(?:BEGIN )?GTID (\d+)-(\d+)-(\d+)(?: cid=(\d+))?")
#: The failing transaction's GTID in an SQL thread's error (`…, end_log_pos 652, Gtid 0-1-5, Internal MariaDB error
#: code: 1062`): MariaDB names it in Last_SQL_Error only.
FAILING_GTID = re.compile(r"\bGtid (\d+-\d+-\d+)\b")
#: A Table_map event's Info: `table_id: 18 (app.t)`.
TABLE_MAP_INFO = re.compile(r"^table_id: \d+ \((.+)\)$")
#: A binlog file name ends in its sequence number: `binlog.000042`.
BINLOG_FILE_NUMBER = re.compile(r"\.(\d+)$")
#: SHOW SLAVE STATUS columns of a connection's filters → the filter names of `ConnectionSettings.filters`. The first
#: three are CHANGE MASTER options, the others connection-prefixed global variables (`name`.replicate_do_db).
FILTER_COLUMNS = {
    "Replicate_Do_Domain_Ids": "do_domain_ids",
    "Replicate_Ignore_Domain_Ids": "ignore_domain_ids",
    "Replicate_Ignore_Server_Ids": "ignore_server_ids",
    "Replicate_Do_DB": "replicate_do_db",
    "Replicate_Ignore_DB": "replicate_ignore_db",
    "Replicate_Do_Table": "replicate_do_table",
    "Replicate_Ignore_Table": "replicate_ignore_table",
    "Replicate_Wild_Do_Table": "replicate_wild_do_table",
    "Replicate_Wild_Ignore_Table": "replicate_wild_ignore_table",
}
#: The filters set by CHANGE MASTER (a list of ids in parentheses).
CHANGE_MASTER_FILTERS = ("do_domain_ids", "ignore_domain_ids", "ignore_server_ids")
#: Events read per SHOW BINLOG EVENTS or SHOW RELAYLOG EVENTS statement.
EVENTS_PAGE_ROWS = 5000
#: The offset part of an event cursor (binlog files are far below 4 GiB: max_binlog_size is at most 1 GiB).
CURSOR_OFFSET_BITS = 32


# -- addresses --------------------------------------------------------------------------------------------------


def split_address(address: str) -> tuple[str, int]:
    """`host:port` or `[v6]:port` → (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not a host:port address: {address!r}")
    return host.strip("[]"), int(port)


def join_address(host: str, port: int | str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# -- SHOW ALL SLAVES STATUS ------------------------------------------------------------------------------------


def _int(value: Any, default: int = 0) -> int:
    if value is None or value == "":
        return default
    return int(value)


def io_state(row: Mapping[str, Any]) -> IoState:
    running = str(row.get("Slave_IO_Running") or "No")
    errno = _int(row.get("Last_IO_Errno"))
    if running == "Yes":
        return IoState.connected
    if running in ("Connecting", "Preparing"):
        return IoState.reconnecting if errno else IoState.connecting
    return IoState.error if errno else IoState.stopped


def sql_state(row: Mapping[str, Any]) -> SqlState:
    running = str(row.get("Slave_SQL_Running") or "No")
    if running != "Yes":
        if _int(row.get("Last_SQL_Errno")):
            return SqlState.error
        if str(row.get("Until_Condition") or "None") != "None":
            return SqlState.until_reached
        return SqlState.stopped
    remaining = row.get("SQL_Remaining_Delay")
    if remaining not in (None, "") and _int(remaining) > 0:
        return SqlState.delaying
    state = str(row.get("Slave_SQL_Running_State") or row.get("Slave_SQL_State") or "")
    if "waiting for more updates" in state.lower():
        return SqlState.waiting_for_relay
    return SqlState.applying


def last_error(row: Mapping[str, Any]) -> ReplicationError | None:
    """The SQL thread's error first (it stops the connection), else the IO thread's (it may be retrying)."""
    for side, errno_key, error_key in (("sql", "Last_SQL_Errno", "Last_SQL_Error"),
                                       ("io", "Last_IO_Errno", "Last_IO_Error")):  # fmt: skip
        errno = _int(row.get(errno_key))
        if errno:
            message = str(row.get(error_key) or "")
            named = FAILING_GTID.search(message) if side == "sql" else None
            return ReplicationError(side=side, code=str(errno), message=message, gtid=named.group(1) if named else None)
    return None


def connection_settings(row: Mapping[str, Any], server: Mapping[str, Any]) -> ConnectionSettings:
    """A connection's settings from its status row, and from the server's variables where MariaDB keeps them per
    server rather than per connection (`server`: gtid_ignore_duplicates, slave_parallel_threads,
    slave_domain_parallel_threads, rpl_semi_sync_slave_enabled)."""
    period = row.get("Slave_heartbeat_period")
    filters = {
        name: str(row[column]).strip() for column, name in FILTER_COLUMNS.items() if str(row.get(column) or "").strip()
    }
    workers = server.get("parallel_threads")
    domain_workers = server.get("domain_parallel_threads")
    semi_sync = server.get("semi_sync_replica")
    return ConnectionSettings(
        delay_s=_int(row.get("SQL_Delay")),
        ignore_duplicates=bool(_int(server.get("ignore_duplicates"))),
        heartbeat_ms=round(float(period) * 1000) if period not in (None, "") else None,
        parallel_mode=str(row["Parallel_Mode"]) if row.get("Parallel_Mode") else None,
        workers=_int(workers) if workers is not None else None,
        domain_workers_max=_int(domain_workers) if domain_workers is not None else None,
        semi_sync_replica=bool(_int(semi_sync)) if semi_sync is not None else None,
        filters=filters,
    )


def replica_connection(
    row: Mapping[str, Any], slave_pos: str, connections: int, server: Mapping[str, Any] | None = None
) -> ReplicaConnection:
    """One row of SHOW ALL SLAVES STATUS. `slave_pos` is @@gtid_slave_pos (the status row's own Gtid_Slave_Pos is
    the server's current position): a connection's applied position is its part of it, by the domains the
    connection has received (all of it when the server has a single connection). `server`: the variables
    `connection_settings` reads."""
    received = canonical(row.get("Gtid_IO_Pos"))
    received_domains = by_domain(received).keys()
    if received_domains:
        applied = str(from_gtids(g for g in position(slave_pos) if g.domain in received_domains))
    else:
        applied = canonical(slave_pos) if connections == 1 else ""
    io, sql = io_state(row), sql_state(row)
    behind = row.get("Seconds_Behind_Master")
    seconds = float(behind) if behind not in (None, "") else 0.0
    applied_by_domain = by_domain(applied)
    lag = {
        gtid.domain: DomainLag(
            transactions=max(
                0, gtid.seq - (applied_by_domain[gtid.domain].seq if gtid.domain in applied_by_domain else 0)
            ),
            seconds=seconds,
        )
        for gtid in position(received)
    }
    return ReplicaConnection(
        name=str(row.get("Connection_name") or ""),
        master_address=join_address(str(row.get("Master_Host") or ""), _int(row.get("Master_Port"))),
        running=io in (IoState.connected, IoState.connecting, IoState.reconnecting)
        and sql in (SqlState.applying, SqlState.waiting_for_relay, SqlState.delaying),
        io_state=io,
        sql_state=sql,
        received_position=received,
        applied_position=applied,
        # MariaDB does not tell a replica its master's binlog position; what it last heard is what it received.
        master_position=received,
        lag=lag,
        last_error=last_error(row),
        until=None,
        delay_s=_int(row.get("SQL_Delay")),
        # Slave_IO_State "Waiting for the slave SQL thread to free enough relay log space".
        waiting_for_relay_space="relay log space" in str(row.get("Slave_IO_State") or ""),
        settings=connection_settings(row, server or {}),
        skip_counter=_int(row.get("Skip_Counter")),
        sql_state_detail=str(row.get("Slave_SQL_Running_State") or row.get("Slave_SQL_State") or "") or None,
    )


#: Parallel workers' states that are no wait of their own: idle, or ordered behind another worker's transaction.
IDLE_WORKER_STATES = ("waiting for work from sql thread", "waiting for prior transaction")


def worker_waits(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """What the parallel apply workers wait for, from `SELECT STATE, COUNT(*) AS n … WHERE COMMAND = 'Slave_worker'
    GROUP BY STATE` ("4 workers: Waiting for table metadata lock"); None when none waits. MariaDB's workers are a
    pool of the server, not of one connection."""
    waits = [
        (int(r["n"]), str(r["STATE"]))
        for r in rows
        if str(r.get("STATE") or "") and not str(r["STATE"]).lower().startswith(IDLE_WORKER_STATES)
    ]
    if not waits:
        return None
    return "; ".join(f"{n} worker{'s' if n > 1 else ''}: {state}" for n, state in sorted(waits, reverse=True))


# -- SHOW SLAVE HOSTS -------------------------------------------------------------------------------------------


def connected_replica(row: Mapping[str, Any]) -> ConnectedReplica:
    """A row of SHOW SLAVE HOSTS: the replica's report_host and report_port (its own SQL and replication address)."""
    host = str(row.get("Host") or "")
    address = join_address(host, _int(row.get("Port")))
    return ConnectedReplica(
        server_id=_int(row.get("Server_id")),
        address=address,
        host=host,
        sent_position="",
        listen_address=address,
        admin_address=address,
    )


# -- SHOW BINLOG EVENTS -----------------------------------------------------------------------------------------


def file_number(file: str) -> int:
    match = BINLOG_FILE_NUMBER.search(file)
    if match is None:
        raise ValueError(f"not a binlog file name: {file!r}")
    return int(match.group(1))


def cursor(file: str, offset: int) -> int:
    """A binlog coordinate as one integer that grows with the binlog (for EventsPage.next_before)."""
    return (file_number(file) << CURSOR_OFFSET_BITS) | offset


def cursor_parts(value: int) -> tuple[int, int]:
    """(file number, offset) of a cursor."""
    return value >> CURSOR_OFFSET_BITS, value & ((1 << CURSOR_OFFSET_BITS) - 1)


@dataclass
class BinlogFileScan:
    """The transactions of one binlog file read so far by SHOW BINLOG EVENTS, fed page by page (a page may end in
    the middle of a transaction: its tables are completed by the next page)."""

    file: str
    #: Where the next page starts: the end of the last event read (4 is the first event after the file's magic).
    next_pos: int = 4
    #: Where the scan started (4: the file's first event); transactions starting before it are not in the scan.
    start_pos: int = 4
    #: Oldest first.
    transactions: list[BinlogTransaction] = field(default_factory=list)
    #: Events read, for the caller's scan bounds.
    events_read: int = 0
    #: At most this many transactions are kept, the newest (None: all): older ones are dropped as newer arrive, so a
    #: scan of a file of any size holds a bounded number.
    kept_max: int | None = None
    #: Only transactions of this GTID domain are kept (None: every domain's).
    domain: int | None = None
    #: How many transactions were dropped, older than every kept one (their part of the file is not in the scan).
    dropped: int = 0
    _tables: list[str] = field(default_factory=list)
    #: The transaction being read is one the domain filter leaves out (its Table_map events go with it).
    _skipping: bool = False

    def feed(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.events_read += 1
            self.next_pos = max(self.next_pos, _int(row.get("End_log_pos")))
            kind = str(row.get("Event_type") or "")
            info = str(row.get("Info") or "")
            if kind == "Gtid":
                match = GTID_INFO.match(info)
                if match is None:
                    continue
                self._tables = []
                domain, server_id, seq_no, cid = match.groups()
                self._skipping = self.domain is not None and int(domain) != self.domain
                if self._skipping:
                    continue
                self.transactions.append(
                    BinlogTransaction(
                        gtid=f"{domain}-{server_id}-{seq_no}",
                        domain=int(domain),
                        server_id=int(server_id),
                        seq_no=int(seq_no),
                        commit_id=int(cid) if cid is not None else None,
                        commit_ts_us=None,
                        file=str(row.get("Log_name") or self.file),
                        offset=_int(row.get("Pos")),
                    )
                )
            elif kind == "Table_map" and self.transactions and not self._skipping:
                match = TABLE_MAP_INFO.match(info)
                if match is not None and match.group(1) not in self._tables:
                    self._tables.append(match.group(1))
                    self.transactions[-1] = replace(self.transactions[-1], tables=tuple(self._tables))
        excess = 0 if self.kept_max is None else len(self.transactions) - max(1, self.kept_max)
        if excess > 0:
            del self.transactions[:excess]
            self.dropped += excess


def transactions(rows: Iterable[Mapping[str, Any]], file: str = "") -> list[BinlogTransaction]:
    """The transactions that start in `rows` (oldest first), each with the tables its Table_map events name."""
    scan = BinlogFileScan(file)
    scan.feed(rows)
    return scan.transactions


def with_worker_waits(connection: ReplicaConnection, waits: str | None) -> ReplicaConnection:
    """The connection with the workers' waits as what its applier is doing, where some worker waits (the coordinator
    then reads "waiting for more updates" while the transactions it handed out wait on a lock)."""
    return (
        replace(connection, sql_state_detail=waits)
        if waits and connection.sql_state != SqlState.stopped
        else connection
    )
