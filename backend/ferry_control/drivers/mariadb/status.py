"""Reading a MariaDB server: its status in one poll (identity, positions, connections, replicas, binlog files,
master role, warnings), its positions alone, and its semi-sync state; setting its master role (semi-sync)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from ferry_control.core.gtid import by_domain, canonical, canonical_state
from ferry_control.drivers.base import SEMI_SYNC_FALLEN_BACK, MasterRole, Positions, ReplicaConnection, ServerStatus
from ferry_control.drivers.errors import DriverError, ErrorKind, ServerProtocolError
from ferry_control.drivers.mariadb.relay import MariadbRelayLog, failing_event
from ferry_control.drivers.mariadb.rows import (
    connected_replica,
    join_address,
    replica_connection,
    with_worker_waits,
    worker_waits,
)

#: The one round trip that reads a server's identity, flags and positions.
STATUS_VARIABLES = (
    "SELECT @@server_id AS server_id, @@gtid_domain_id AS domain_id, @@read_only AS read_only, @@log_bin AS log_bin, "
    "@@gtid_binlog_pos AS binlog_pos, @@gtid_slave_pos AS slave_pos, @@gtid_current_pos AS current_pos, "
    "@@gtid_binlog_state AS binlog_state, @@report_host AS report_host, @@report_port AS report_port, "
    "@@port AS port, @@version AS version, @@binlog_format AS binlog_format, "
    "@@gtid_ignore_duplicates AS ignore_duplicates, "
    "@@slave_parallel_threads AS parallel_threads, @@slave_domain_parallel_threads AS domain_parallel_threads, "
    "@@rpl_semi_sync_slave_enabled AS semi_sync_replica, @@sync_binlog AS sync_binlog, "
    "@@rpl_semi_sync_master_enabled AS semi_sync_master, @@rpl_semi_sync_master_timeout AS semi_sync_timeout_ms, "
    "@@rpl_semi_sync_master_wait_point AS semi_sync_wait_point, "
    "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
    "WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_STATUS') AS semi_sync_master_status"
)
#: What the parallel apply workers are doing (PROCESS privilege), for the reason of a stalled connection.
WORKER_STATES = (
    "SELECT STATE, COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE COMMAND = 'Slave_worker' GROUP BY STATE"
)
#: rpl_semi_sync_master_wait_point's values.
SEMI_SYNC_WAIT_POINTS = ("AFTER_SYNC", "AFTER_COMMIT")


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


class MariadbStatus(MariadbRelayLog):
    """Reads of the server's state, and its master-side settings."""

    async def status(self) -> ServerStatus:
        rows = await self.sql.query(STATUS_VARIABLES)
        if not rows:
            raise ServerProtocolError(self.address, "no_status", "the status variables came back empty")
        v = rows[0]
        connections = await self.sql.query("SHOW ALL SLAVES STATUS")
        replicas = await self.sql.query("SHOW SLAVE HOSTS")
        files = await self.sql.query("SHOW BINARY LOGS") if int(v["log_bin"]) else []
        waits = worker_waits(await self.sql.query(WORKER_STATES)) if connections else None
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
                            with_worker_waits(replica_connection(row, slave_pos, len(connections), v), waits),
                            row,
                            slave_pos,
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
            binlog_format=str(v["binlog_format"]) if v.get("binlog_format") else None,
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

    async def take_master_role(self, role: MasterRole, *, before: MasterRole | None = None) -> MasterRole:
        """SET GLOBAL rpl_semi_sync_master_* (REPLICATION MASTER ADMIN): the timeout and wait point first, so
        commits never wait with the old ones once semi-sync is on. Only what differs from `before` (read here when
        not given) is set: nothing at all when the roles match."""
        if before is None:
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
