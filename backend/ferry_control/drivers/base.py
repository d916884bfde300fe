"""The driver interface: everything the control plane asks of a server, whatever its kind.

Results are plain frozen dataclasses in the vocabulary of MariaDB-style GTID replication (gtid_binlog_pos,
gtid_slave_pos, gtid_current_pos, named connections with IO and SQL states, START … UNTIL, MASTER_GTID_WAIT), so a
`mariadb` driver can fill them from SHOW ALL SLAVES STATUS and @@gtid_* variables without changing the interface.
Positions are canonical GTID position text (`0-1-100,1-2-50`, sorted by domain, "" for none).
"""

from __future__ import annotations

import abc
import asyncio
import enum
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from ferry_control.drivers.errors import DriverError, ErrorKind, ServerRefused

#: The canary-table key of the collector's probe writes on masters (`ServerDriver.write_probe`).
WRITE_PROBE_KEY = "ferry-write-probe"


class IoState(enum.StrEnum):
    """The receiving side of a replica connection (MariaDB: Slave_IO_Running and its state text)."""

    stopped = "stopped"
    connecting = "connecting"
    connected = "connected"
    #: Lost the master; retrying.
    reconnecting = "reconnecting"
    #: Stopped by an error that retrying cannot fix.
    error = "error"


class SqlState(enum.StrEnum):
    """The applying side of a replica connection (MariaDB: Slave_SQL_Running and its state text)."""

    stopped = "stopped"
    waiting_for_relay = "waiting_for_relay"
    applying = "applying"
    delaying = "delaying"
    until_reached = "until_reached"
    #: Held by the operator (ferryd: started with `sql_paused`): the receiving side goes on, nothing is applied.
    paused = "paused"
    error = "error"


@dataclass(frozen=True)
class Positions:
    """A server's three GTID positions."""

    #: Newest GTID per domain in the server's own binlog.
    binlog: str
    #: Last GTID per domain applied by replication.
    slave: str
    #: Per domain, the newer of the two: what this server has.
    current: str
    #: Last GTID per (domain, server_id) in the binlog (MariaDB @@gtid_binlog_state): several GTIDs per domain,
    #: so not a position; "" when the server does not say.
    binlog_state: str = ""


@dataclass(frozen=True)
class DomainLag:
    #: seq_no difference between the master's position and what the replica applied.
    transactions: int
    #: Now minus the origin commit time of the last applied transaction (0 when caught up).
    seconds: float


@dataclass(frozen=True)
class ReplicationError:
    #: `io` or `sql`.
    side: str
    #: A stable code (REPLICA_AHEAD, DIVERGED, POSITION_PURGED, … for ferry; the errno for MariaDB).
    code: str
    message: str
    at_us: int | None = None
    #: The GTID of the transaction that failed to apply, where the server names it (an `sql` error): filled by each
    #: driver from what its server reports, so no caller reads a server's message.
    gtid: str | None = None


@dataclass(frozen=True)
class ReplicaConnection:
    """One named replication connection of a replica (multi-source: several)."""

    name: str
    #: The master's address as configured (`host:port`).
    master_address: str
    running: bool
    io_state: IoState
    sql_state: SqlState
    received_position: str
    applied_position: str
    #: The master's binlog position as last heard.
    master_position: str
    #: Per domain as the server computes it.
    lag: Mapping[int, DomainLag]
    last_error: ReplicationError | None
    until: str | None = None
    delay_s: int = 0
    #: The receiving side is paused because the relay log reached its space limit (ferryd's
    #: --relay-log-space-bytes-max, MariaDB's relay_log_space_limit) until the applying side frees space: the
    #: connection is still connected, but receives nothing until then.
    waiting_for_relay_space: bool = False
    #: The connection's own settings, as the server reports them, so a repoint can keep them (see
    #: `ConnectionSettings`); None where the server does not say.
    settings: ConnectionSettings | None = None
    #: Transactions its next start will pass over (MariaDB: Skip_Counter, ferryd: skip_counter): what is pending while
    #: it is stopped, what is left while it runs; see `ServerDriver.skip_transactions`.
    skip_counter: int = 0
    #: The server's own words for what the applying side is doing (MariaDB: Slave_SQL_Running_State, e.g. a
    #: worker's lock wait); None when it gives none.
    sql_state_detail: str | None = None


@dataclass(frozen=True)
class ConnectionSettings:
    """A replica connection's own settings besides its master and start position: what CHANGE MASTER sets on it
    (MariaDB: MASTER_DELAY, MASTER_HEARTBEAT_PERIOD, DO_/IGNORE_DOMAIN_IDS, IGNORE_SERVER_IDS, and the
    connection-prefixed variables such as `name.slave_parallel_mode`, `name.replicate_do_db`). A driver reports what
    it can read and takes back what it reported, so repointing a replica keeps them. None: not reported (the
    server's default applies)."""

    delay_s: int = 0
    ignore_duplicates: bool = False
    #: How often an idle master sends a heartbeat.
    heartbeat_ms: int | None = None
    #: Parallel apply: `serial`, `conservative`, `optimistic` (MariaDB adds `aggressive`, `minimal`, `none`).
    parallel_mode: str | None = None
    #: Transactions applied at once, and at most per domain.
    workers: int | None = None
    domain_workers_max: int | None = None
    #: Whether the connection acknowledges receipt to a semi-sync master (MariaDB: rpl_semi_sync_slave_enabled);
    #: None when the server has no per-connection setting (ferry: a replica always acknowledges).
    semi_sync_replica: bool | None = None
    #: Replication filters by name, as the driver understands them (MariaDB: `do_domain_ids`, `ignore_domain_ids`,
    #: `ignore_server_ids`, `replicate_do_db`, `replicate_ignore_table`, … with their values as text).
    filters: Mapping[str, str] = field(default_factory=dict)

    def filter_ids(self, name: str) -> list[int]:
        """A filter that lists ids (`do_domain_ids`, `ignore_domain_ids`, `ignore_server_ids`: "1, 3") as numbers;
        ValueError when it holds anything else."""
        return [int(x) for x in self.filters.get(name, "").replace(" ", "").split(",") if x]


@dataclass(frozen=True)
class ParallelApplyLimits:
    """What a server kind's parallel apply accepts (`ServerDriver.set_parallel_apply`), so a caller can refuse a
    change before anything is touched, with the kind's own words."""

    #: The modes, as the server names them (ferryd: serial, conservative, optimistic; MariaDB's
    #: slave_parallel_mode: none, minimal, conservative, optimistic, aggressive).
    modes: tuple[str, ...]
    #: The modes that apply several transactions of a domain at once (what a raise for catch-up needs).
    parallel_modes: tuple[str, ...]
    #: The mode a raise for catch-up takes when the connection's is not one of `parallel_modes`.
    catch_up_mode: str
    workers_min: int
    workers_max: int
    #: The least per-domain maximum (MariaDB: 0, no per-domain limit); the most is `workers`.
    domain_workers_min: int
    #: The workers (and per-domain maximum) belong to the whole server, not to one connection (MariaDB: the
    #: slave_parallel_threads pool; changing it pauses every connection's applying side for the moment).
    server_wide_workers: bool

    def refusal(self, mode: str, workers: int, domain_workers_max: int) -> str | None:
        """Why these settings are refused, in words naming the value; None when they are accepted."""
        if mode not in self.modes:
            return f"mode {mode!r} is not one of {', '.join(self.modes)}"
        if not self.workers_min <= workers <= self.workers_max:
            return f"workers {workers} is not within {self.workers_min} to {self.workers_max}"
        if not self.domain_workers_min <= domain_workers_max <= max(workers, self.domain_workers_min):
            return (
                f"domain_workers_max {domain_workers_max} is not within {self.domain_workers_min} to workers "
                f"({workers})"
            )
        return None


@dataclass(frozen=True)
class ParallelApplyChange:
    """What `ServerDriver.set_parallel_apply` did."""

    #: The connection's settings before and after (mode, workers, domain_workers_max as the server reports them).
    before: ConnectionSettings
    after: ConnectionSettings
    #: Connections whose applying side was stopped for the change and started again at their position (MariaDB: a
    #: server-wide worker count pauses every connection that applies); empty when none needed to be.
    paused: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConnectedReplica:
    """A replica streaming from this server, as the master sees it (MariaDB: SHOW SLAVE HOSTS)."""

    server_id: int
    #: Where the replica connected from (ferry: its outgoing socket, not its listen or admin address).
    address: str
    #: Host part of `address`.
    host: str
    sent_position: str
    #: The replica's own protocol and admin addresses as it advertises them (None when it does not).
    listen_address: str | None = None
    admin_address: str | None = None


@dataclass(frozen=True)
class ChangeConsumer:
    """An application reading this server's committed changes as a change consumer (ferryd: the consumer token;
    docs/protocol.md "Change subscriptions"). Not a replica: never counted for semi-sync, never in `replicas`."""

    name: str
    #: Where it connected from.
    address: str
    #: The domains it follows (empty: every domain).
    domains: tuple[int, ...]
    #: Where it subscribed from, and the newest GTID per domain sent to it since.
    start_position: str
    position: str
    connected_at_us: int
    transactions_sent: int
    #: Per domain: transactions it is behind this server's binlog, and seconds since the commit of the last one
    #: sent (0 when caught up).
    lag: Mapping[int, DomainLag]


@dataclass(frozen=True)
class CutOffConsumer:
    """A change consumer the server cut off (it stopped reading while the server's binlog grew past a bound)."""

    name: str
    address: str
    #: Where it was: it subscribes again from there.
    position: str
    at_us: int
    reason: str


@dataclass(frozen=True)
class ChangeConsumers:
    """A server's change consumers now, the last ones it cut off, and how many it serves at most."""

    consumers: tuple[ChangeConsumer, ...]
    cut_off: tuple[CutOffConsumer, ...] = ()
    cut_off_total: int = 0
    consumers_max: int | None = None


#: The warning of a master whose semi-sync fell back to asynchronous (the same words for every kind).
SEMI_SYNC_FALLEN_BACK = (
    "semi-sync fell back to asynchronous: commits are acknowledged before any replica has them, until a replica "
    "catches up and acknowledges again"
)


@dataclass(frozen=True)
class MasterRole:
    """What a server does as a master that its successor must do too, so that a switchover does not quietly weaken
    the cluster (MariaDB: semi-sync on the master side — rpl_semi_sync_master_enabled, _timeout, _wait_point).
    None: the server kind has no such runtime setting (ferryd's durability is a start-up flag of every node)."""

    semi_sync: bool | None = None
    semi_sync_timeout_ms: int | None = None
    #: AFTER_SYNC (lossless: a commit is visible only once a replica has it) or AFTER_COMMIT.
    semi_sync_wait_point: str | None = None


@dataclass(frozen=True)
class ServerStatus:
    """One poll's worth of what a server reports."""

    server_id: int
    read_only: bool
    positions: Positions
    connections: tuple[ReplicaConnection, ...]
    replicas: tuple[ConnectedReplica, ...]
    #: Set when the server reports itself failed (ferry: a binlog write or fsync failed).
    failure: str | None = None
    default_domain: int = 0
    binlog_files: tuple[str, ...] = ()
    #: The server's own protocol address as it advertises it (None when it does not say).
    listen_address: str | None = None
    #: The server software's version as it reports it (MariaDB: @@version; None when it does not say).
    version: str | None = None
    #: How the server writes its binlog (MariaDB: @@binlog_format, ROW / MIXED / STATEMENT); None when it does not
    #: say (ferryd logs transactions as row changes, always).
    binlog_format: str | None = None
    #: The server sends transactions to its replicas before they are durable in its own binlog (ferryd: durability
    #: `none` / `network`; MariaDB: sync_binlog ≠ 1): after a crash of its machine, its replicas may hold
    #: transactions its binlog lost. None when the server does not say.
    replicas_may_be_ahead: bool | None = None
    #: Its master-side settings as this poll read them (see `MasterRole`; None: the kind has none), kept so a
    #: failover can give them to the new master when the old one no longer answers.
    master_role: MasterRole | None = None
    #: What the server reports that an operator should look at, in words (semi-sync fallen back to asynchronous;
    #: ferryd: binlog expiry holding a file back for a replica, or failing).
    warnings: tuple[str, ...] = ()
    #: Its change consumers now (ferryd); None when the kind does not tell them apart from its replicas (MariaDB: a
    #: binlog reader such as Debezium or mysqlbinlog connects as a replica).
    consumers: tuple[ChangeConsumer, ...] | None = None


@dataclass(frozen=True)
class ChangeMaster:
    """CHANGE MASTER: where a connection replicates from and from which position."""

    master_address: str
    #: `slave_pos` (normal), `current_pos` (a demoted master joining its successor).
    use_gtid: Literal["slave_pos", "current_pos"] = "slave_pos"
    #: An explicit GTID position that becomes gtid_slave_pos (needs every connection stopped).
    position: str | None = None
    #: A legacy binlog coordinate of the master, instead of `position`.
    file: str | None = None
    offset: int | None = None
    ignore_duplicates: bool = False
    delay_s: int = 0
    heartbeat_ms: int | None = None
    #: The connection's other settings to set (a repoint passes those the connection had); None: the server's
    #: defaults. Where given, its delay_s, ignore_duplicates and heartbeat_ms take the place of the fields above.
    settings: ConnectionSettings | None = None


@dataclass(frozen=True)
class Skipped:
    """What `ServerDriver.skip_transactions` did."""

    #: The skipped transactions' GTIDs, oldest first, where the server tells them before they are skipped (None:
    #: it does not say).
    gtids: tuple[str, ...] | None
    #: True: the skip happens at the connection's next start (a counter, cleared by a skip of 0); False: it is
    #: done already (gtid_slave_pos is past them).
    pending: bool
    #: Where the server read `gtids` (MariaDB: "the relay log"), in words.
    source: str | None = None
    #: Other connections of the server stopped for the moment of the skip and started again (MariaDB: a new
    #: gtid_slave_pos needs every connection stopped).
    paused: tuple[str, ...] = ()


@dataclass(frozen=True)
class WaitResult:
    reached: bool
    #: The server's position when the wait ended.
    position: str


@dataclass(frozen=True)
class WritesStopped:
    """Where a read-only server's client writes stopped (see `ServerDriver.wait_commits_landed`)."""

    #: gtid_binlog_pos once no client commit was in flight: every commit acknowledged to a client is at or before
    #: it, and no client commit lands after it while the server stays read-only.
    position: str
    #: Client commits that were in flight when read-only went on (those waited for); None where the server waited
    #: for them itself without counting them (MariaDB: `SET GLOBAL read_only=1` blocks commits first).
    in_flight_at_read_only: int | None
    #: How long the server waited for them.
    waited_s: float


@dataclass(frozen=True)
class BinlogTransaction:
    """One committed transaction from the server's recent binlog."""

    gtid: str
    domain: int
    server_id: int
    seq_no: int
    #: Transactions sharing it were group-committed together.
    commit_id: int | None
    commit_ts_us: int | None
    file: str | None
    offset: int | None
    tables: tuple[str, ...] = ()
    rows: int | None = None


@dataclass(frozen=True)
class EventsPage:
    """Newest first; `next_before` pages back (None on the last page)."""

    transactions: tuple[BinlogTransaction, ...]
    next_before: int | None


@dataclass(frozen=True)
class TableChecksum:
    rows: int
    checksum: int


@dataclass(frozen=True)
class Check:
    """One named preflight check and what it found (a switchover's or a driver's own)."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Checksums:
    #: The GTID position the checksums correspond to.
    position: str
    tables: Mapping[str, TableChecksum] = field(default_factory=dict)


#: A primary key's value as a chunk bound carries it: one value per key column (text, numbers; JSON-able).
KeyValue = tuple[str | int | float, ...]


@dataclass(frozen=True)
class TableChunks:
    """How a table is cut into chunks by its primary key, as its source cut it: chunk 0 holds the keys below
    `bounds[0]`, chunk i the keys from `bounds[i-1]` (inclusive) below `bounds[i]`, the last one the keys from the
    last bound on (`len(bounds) + 1` chunks). A table without a primary key is one chunk (`key` empty)."""

    table: str
    key: tuple[str, ...]
    bounds: tuple[KeyValue, ...] = ()

    @property
    def count(self) -> int:
        return len(self.bounds) + 1

    def range_of(self, index: int) -> tuple[KeyValue | None, KeyValue | None]:
        """Chunk `index`'s lower bound (inclusive; None: from the start) and upper bound (exclusive; None: to the
        end)."""
        lower = self.bounds[index - 1] if index > 0 else None
        upper = self.bounds[index] if index < len(self.bounds) else None
        return lower, upper


@dataclass(frozen=True)
class ChunkSum:
    """A chunk's row count and an order-independent checksum of its rows (equal rows give equal sums)."""

    rows: int
    checksum: int


@dataclass(frozen=True)
class ChunkSums:
    """Checksums of some chunks of one table, all read at one GTID position (every domain)."""

    position: str
    sums: Mapping[int, ChunkSum]


@dataclass(frozen=True)
class RewindOutcome:
    """What a rewind cut (or, dry, would cut): the transactions, oldest first, and the archive of them the server
    wrote before cutting (None for a dry run or when nothing was cut)."""

    to: str
    dry_run: bool
    cut: tuple[BinlogTransaction, ...]
    archive: str | None
    #: The binlog state and gtid_slave_pos the rewind left (would leave).
    binlog_state: str
    slave_pos: str

    def cut_by_domain(self) -> dict[int, list[str]]:
        """The cut GTIDs per domain, oldest first."""
        found: dict[int, list[str]] = {}
        for t in self.cut:
            found.setdefault(t.domain, []).append(t.gtid)
        return found


@dataclass(frozen=True)
class HostAccess:
    """How the control plane reaches a server's host for what the server's own protocol cannot do (a rebuild's file
    copy, stopping and starting the server): an SSH login with the key the operator registered for the cluster.
    Kinds whose rebuild goes over their own protocol (ferryd's clone) take none."""

    host: str
    port: int
    user: str
    #: The private key (OpenSSH PEM), decrypted only for the call.
    private_key: str
    #: The host's public key line(s), `known_hosts` format: the host is refused when it shows another.
    known_hosts: str
    #: Run on the recipient's host to stop and to start its server (the cluster's settings; default systemctl).
    stop_command: str = "systemctl stop mariadb"
    start_command: str = "systemctl start mariadb"


@dataclass
class CopyThrottle:
    """The rate a rebuild's copy may use; the operation changes it while the copy runs (it pauses the copy while the
    donor trails its source) and the driver follows it within a second."""

    #: MB/s (10^6 bytes); None: as fast as it goes.
    mb_s: float | None = None
    paused: bool = False


CopyPhase = Literal["starting", "copying", "preparing", "starting_server", "done"]


@dataclass(frozen=True)
class CopyProgress:
    """Where a rebuild's copy stands, as its driver reports it (at least once a second while it runs)."""

    phase: CopyPhase
    bytes_done: int
    #: The donor's estimate of the whole copy (None: not known yet).
    bytes_total: int | None
    #: Over the last few seconds.
    rate_bytes_s: float
    paused: bool = False
    #: The GTID position (every domain) the copy is consistent at, once known; set when `phase` is `done`.
    position: str | None = None
    #: Bytes this copy did not have to fetch again because it resumed an interrupted one.
    resumed_bytes: int = 0


@dataclass(frozen=True)
class RebuildSource:
    """The donor of a rebuild as the recipient's driver sees it: its driver (same kind) and, for kinds that copy
    files over SSH, how to reach its host and the recipient's."""

    driver: ServerDriver
    donor_access: HostAccess | None = None
    recipient_access: HostAccess | None = None


class ServerDriver(abc.ABC):
    """How the control plane talks to one server. Every method may raise a `drivers.errors.DriverError`."""

    #: Which `ServerKind` this driver speaks to.
    kind: str
    #: How the kind names a replica connection's configured delay, so messages say it in the server's words.
    delay_setting: ClassVar[str] = "delay_s"

    @abc.abstractmethod
    async def status(self) -> ServerStatus: ...

    async def positions(self) -> Positions:
        return (await self.status()).positions

    async def replica_connections(self) -> tuple[ReplicaConnection, ...]:
        return (await self.status()).connections

    async def connected_replicas(self) -> tuple[ConnectedReplica, ...]:
        return (await self.status()).replicas

    @abc.abstractmethod
    async def change_master(self, connection: str, change: ChangeMaster) -> None: ...

    @abc.abstractmethod
    async def start_replication(self, connection: str, until: str | None = None) -> None:
        """START (… UNTIL `until`: each listed domain up to its GTID, then the connection stops)."""

    @abc.abstractmethod
    async def stop_replication(self, connection: str) -> None: ...

    @abc.abstractmethod
    async def remove_replication(self, connection: str) -> None:
        """Stop and forget the connection (RESET SLAVE ALL)."""

    async def skip_transactions(self, connection: str, count: int) -> Skipped:
        """Makes the stopped `connection` pass over the next `count` transactions it receives (whole transactions,
        in the master's binlog order, as MariaDB's sql_slave_skip_counter; 0 clears what is pending). They are not
        applied on this server, yet their GTIDs advance its gtid_slave_pos: their changes are lost here. Refusals
        carry the server's own code and message: a `conflict` while the connection runs (or, ferryd, when the
        position it starts from has several domains), a `not_found` for no such connection. The default
        is for kinds that cannot."""
        raise DriverError(
            getattr(self, "address", ""),
            "skip_unsupported",
            f"{self.kind} servers cannot skip replicated transactions",
            kind=ErrorKind.unsupported,
        )

    #: What the kind's parallel apply accepts; None: its parallel apply cannot be changed through the driver.
    parallel_apply_limits: ClassVar[ParallelApplyLimits | None] = None

    async def set_parallel_apply(
        self, connection: str | None, mode: str, workers: int, domain_workers_max: int
    ) -> ParallelApplyChange:
        """Changes how `connection` applies (mode, workers, at most per domain), online: its applying side stops at
        a transaction boundary and starts again at its position (nothing skipped, nothing applied twice; the
        receiving side goes on), or takes the change between two commit groups. A value outside
        `parallel_apply_limits` is refused (`bad_request`) before anything is touched; a connection it does not have
        is `not_found`. Settings already in force change nothing. `connection` None: only what belongs to the
        whole server (`ParallelApplyLimits.server_wide_workers`: the workers; the mode is left alone), nothing for
        kinds that keep the workers per connection. The default is for kinds that cannot."""
        raise DriverError(
            getattr(self, "address", ""),
            "parallel_apply_unsupported",
            f"{self.kind} servers cannot change their parallel apply",
            kind=ErrorKind.unsupported,
        )

    @abc.abstractmethod
    async def set_read_only(self, read_only: bool, *, confirm: bool = True) -> bool:
        """Returns the read-only flag now in force. With `confirm` false a driver may skip reading it back (one round
        trip less inside a move's window, where the next call reads it anyway) and return what it set."""

    async def raise_fence(self) -> bool:
        """Makes the server refuse, from now on, changes sent with an older fencing token of the cluster than the
        one the caller acts with (drivers/fencing.py) — changing nothing else; False when there is nothing to raise:
        the kind keeps no fencing token (MariaDB), or no operation's token is set. A new holder of a cluster raises
        it on every server before repairing any, so a change its predecessor sent before is refused even where the
        new holder has nothing to change."""
        return False

    async def master_role(self) -> MasterRole:
        """This server's master-side settings (see `MasterRole`); the default is for kinds that have none."""
        return MasterRole()

    async def take_master_role(self, role: MasterRole, *, before: MasterRole | None = None) -> MasterRole:
        """Sets what `role` sets (its None fields are left alone); returns the role this server had before —
        `before` when the caller read it already (a move reads it ahead of its window, so inside it only what differs
        is set). The default is for kinds that have no such setting: nothing to set."""
        return MasterRole()

    async def prepare_read_only(self) -> None:
        """Reads, before a move's window, what `kill_sessions_bypassing_read_only` needs to know (MariaDB: which users
        can write despite read-only), so inside the window it only finds and ends their sessions. The default is for
        kinds with nothing to read."""

    async def kill_sessions_bypassing_read_only(self) -> int:
        """Ends the client sessions that can write despite read-only (MariaDB: users with SUPER or READ ONLY ADMIN),
        sparing replication and the driver's own; returns how many it ended. The default is for servers whose
        read-only admits no client write (ferryd): nothing to end."""
        return 0

    #: Whether the server counts the client commits it admitted before read-only went on that have not been
    #: answered yet, so `wait_commits_landed` can tell exactly when the last one has landed. A driver that cannot
    #: leaves it False, and callers fall back to waiting for the binlog position to stand still (a heuristic).
    counts_commits_in_flight: ClassVar[bool] = False

    async def wait_commits_landed(self, timeout_s: float) -> WritesStopped:
        """Keeps (or turns) read-only on and waits, at most `timeout_s`, until every client commit admitted before
        read-only went on has its answer; returns where client writes stopped. Raises a `DriverError` when they
        did not all land in time (the server stays read-only). Only for drivers with `counts_commits_in_flight`
        (a MariaDB driver can offer it if it can tell when the commits in progress at `read_only=1` are done)."""
        raise NotImplementedError(f"{type(self).__name__} cannot count the commits in flight")

    @abc.abstractmethod
    async def wait_for_position(self, position: str, timeout_s: float) -> WaitResult:
        """Waits until the server has reached `position` (MASTER_GTID_WAIT) or the timeout passes."""

    @abc.abstractmethod
    async def recent_events(self, limit: int, domain: int | None = None, before: int | None = None) -> EventsPage: ...

    async def events_cursor_after(self, domain: int, seq_no: int) -> int | None:
        """A cursor for `recent_events(before=…)` just past the transaction `domain`-…-`seq_no` (reading back from it
        lists that transaction among the first), found without reading the binlog between it and the newest end;
        None when the server cannot say (the reader starts at the newest end). For reading a GTID range far back."""
        return None

    async def change_consumers(self) -> ChangeConsumers | None:
        """The applications reading this server's committed changes apart from its replicas, with their position
        and lag; None when the kind has no such thing (MariaDB: a binlog reader connects as a replica)."""
        return None

    async def rewind(self, to: str, dry_run: bool) -> RewindOutcome:
        """Cuts, per domain, every transaction after `to`'s GTID (every one of a domain `to` leaves out), after
        archiving them on the server, and puts the data back as it was at `to`; with `dry_run` only says what it would
        cut. The server must be quiesced (read-only, replicating from nobody, no replica or consumer reading it):
        else a `conflict` naming why, changing nothing. The default is for kinds that cannot."""
        raise DriverError(
            getattr(self, "address", ""),
            "rewind_unsupported",
            f"{self.kind} servers cannot rewind: repoint or rebuild the server by hand",
            kind=ErrorKind.unsupported,
        )

    async def download_rewind_archive(self, name: str, bytes_max: int) -> bytes:
        """The bytes of the archive `name` a rewind left on the server (at most `bytes_max`, else a `DriverError`
        saying how large it is). The default is for kinds that cannot rewind."""
        raise DriverError(
            getattr(self, "address", ""),
            "rewind_unsupported",
            f"{self.kind} servers keep no rewind archives",
            kind=ErrorKind.unsupported,
        )

    #: Whether `export_transactions` works for this kind (a rejoin's rebuild archives its SQL, else the listing).
    exports_transactions: ClassVar[bool] = False

    async def export_transactions(self, after: str, through: str, first_file: str, bytes_max: int) -> bytes:
        """The binlog's transactions after the GTID position `after` up to `through` (inclusive) in the domains
        `through` names (`after` names no other; `D-S-0` there: all of domain D), read from the binlog file
        `first_file` on, as a replayable SQL script (at most `bytes_max`, else a `DriverError`); what a
        rejoin archives before a rebuild. The default is for kinds that cannot."""
        raise DriverError(
            getattr(self, "address", ""),
            "export_unsupported",
            f"{self.kind} servers cannot export binlog transactions as SQL",
            kind=ErrorKind.unsupported,
        )

    #: Whether `rebuild_from` needs `RebuildSource.donor_access` and `recipient_access` (the cluster's host access:
    #: a kind that copies files over SSH); a rebuild's preflight refuses without them, before anything changes.
    rebuild_needs_host_access: ClassVar[bool] = False
    #: Whether `rebuild_from(…, resume=True)` can continue an interrupted copy; a rebuild's preflight refuses a
    #: resume where it cannot, before anything changes.
    rebuild_resumes: ClassVar[bool] = False

    async def rebuild_from(
        self,
        source: RebuildSource,
        *,
        throttle: CopyThrottle,
        on_progress: Callable[[CopyProgress], None],
        resume: bool = False,
    ) -> CopyProgress:
        """Replaces this server's data with a consistent copy of the donor's, streamed and checksummed, at most at
        `throttle`'s rate (followed while it runs), calling `on_progress` at least once a second; returns the final
        progress, whose `position` is the GTID position the copy stands at and is now this server's gtid_slave_pos
        (its binlog state holds nothing of its own). This server must be quiesced (read-only, replicating from
        nobody, nobody reading it), else a `conflict`, changing nothing. `resume` continues an interrupted copy of
        the same donor where the kind can. Cancelling the call (task cancellation) or a failure leaves this server
        stopped (not serving, not replicating) and its copy marked incomplete — never half-joined — and raises. The
        default is for kinds that cannot."""
        raise DriverError(
            getattr(self, "address", ""),
            "rebuild_unsupported",
            f"{self.kind} servers cannot be rebuilt from a donor by Ferry",
            kind=ErrorKind.unsupported,
        )

    @abc.abstractmethod
    async def checksums(self) -> Checksums: ...

    async def user_tables(self) -> tuple[str, ...]:
        """The server's user tables (`schema.table`, the server's own schemas left out), sorted. The default: the
        tables its checksums name."""
        return tuple(sorted((await self.checksums()).tables))

    async def chunk_bounds(self, table: str, chunk_rows: int) -> TableChunks:
        """Cuts `table` into chunks of about `chunk_rows` rows by its primary key (read on a source, without locking;
        the bounds need not be at one position: they only split the key space). The default: one chunk."""
        return TableChunks(table=table, key=())

    async def chunk_checksums(self, chunks: TableChunks, indexes: tuple[int, ...]) -> ChunkSums:
        """The checksums of the chunks `indexes` of `chunks.table`, all at one GTID position, locking nothing (a
        consistent read). On a replica stopped at a position they are that position's. The default, for a kind with
        one chunk per table: its table checksums."""
        sums = await self.checksums()
        table = sums.tables.get(chunks.table)
        found = ChunkSum(rows=table.rows, checksum=table.checksum) if table is not None else ChunkSum(0, 0)
        return ChunkSums(position=sums.position, sums={i: found for i in indexes})

    async def replication_checks(self) -> list[Check]:
        """The checks this server must pass to become a master that replicas follow, in the server's own terms
        (MariaDB: log_bin, log_slave_updates, gtid_strict_mode, ROW binlog format, Ferry's privileges for the moves,
        the replication login usable). Run on a switchover's or failover's candidate by its preflight. The default:
        none beyond the generic ones (a ferryd node has no such settings to get wrong)."""
        return []

    @abc.abstractmethod
    async def write_canary(self, domain: int, key: str, fields: Mapping[str, object]) -> str:
        """Commits one canary row (`key` → `fields`) in GTID domain `domain` into the control plane's own canary
        table on this server (a master) and returns its GTID. Used by drills to prove each domain replicates."""

    async def write_probe(self, domain: int, timeout_s: float) -> str | None:
        """Commits one probe row (`WRITE_PROBE_KEY` in the canary table) in `domain` within `timeout_s`: None when it
        committed, or when the server refused it (read-only is a deliberate state, not a failure); else why the
        master cannot commit — no commit in time (stuck: a full disk, a semi-sync wait with no replica), or the
        write failed."""
        try:
            async with asyncio.timeout(timeout_s):
                await self.write_canary(domain, WRITE_PROBE_KEY, {"at_us": time.time_ns() // 1000})
        except TimeoutError:
            return f"a probe write did not commit within {timeout_s} s"
        except ServerRefused:
            return None
        except DriverError as e:
            return f"a probe write failed: {e}"
        return None

    @abc.abstractmethod
    async def read_canaries(self, keys: list[str]) -> dict[str, dict[str, object] | None]:
        """The canary rows written by `write_canary` as this server has them (None: not there)."""

    async def aclose(self) -> None:
        """Releases what the driver holds (connections); the default holds nothing of its own."""
