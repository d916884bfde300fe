"""An in-memory `ServerDriver` over the simulated cluster, in one of two flavours.

ferryd's (drivers/ferry.py and the node's admin API, docs/node-api.md): change-master refuses a running connection
(and an explicit position while any connection runs), start refuses a running one, stop and remove refuse an unknown
one, read-only answers the flag in force at once — a commit admitted before still lands after — and the in-flight
wait turns read-only on and answers once the commits admitted before have landed (it counts them),
wait-for-position waits until the binlog position is ahead of the target.

MariaDB's (drivers/mariadb/): `SET GLOBAL read_only=1` returns only once every commit in progress has landed, so the
in-flight wait only reads the position (counting nothing); START SLAVE of a running connection and STOP SLAVE of a
stopped one change nothing (a warning), RESET SLAVE ALL of a running one stops it first.

ferryd's fencing tokens (docs/node-api.md "Fencing tokens"): a change carries the token of the operation or
reconcile it is sent for (drivers/fencing.py, read when it is sent — before a pause), the server keeps the highest
per scope (`Server.fences`) and refuses a lower one (`StaleFence`) before it takes effect; `raise_fence` records
one. MariaDB's flavour keeps none.

Every call goes through `_call`: half a round trip to the server, the fault decided for it (faults.py), the cluster
moved to now, the effect, half a round trip back. A driver belongs to one API `Instance`: a crashed instance's calls
never come back."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from ferry_control.drivers import fencing
from ferry_control.drivers.base import (
    BinlogTransaction,
    ChangeMaster,
    Checksums,
    ConnectionSettings,
    DomainLag,
    EventsPage,
    IoState,
    Positions,
    ReplicaConnection,
    ServerDriver,
    ServerStatus,
    SqlState,
    WaitResult,
    WritesStopped,
)
from ferry_control.drivers.credentials import NO_CREDENTIALS, ServerCredentials
from ferry_control.drivers.errors import (
    ServerBadRequest,
    ServerConflict,
    ServerNotFound,
    ServerUnreachable,
)
from tests.simulation import replication
from tests.simulation.clock import now
from tests.simulation.cluster import Acked, Change, Cluster
from tests.simulation.faults import Fault, FaultPlan, Instance
from tests.simulation.servers import Connection, Server, parse_position, position_text

T = TypeVar("T")

#: The changes ferryd fences (its admin API's; a canary's write goes through the protocol, as a client's).
FENCED = (
    "change_master", "start_replication", "stop_replication", "remove_replication", "set_read_only",
    "wait_commits_landed", "raise_fence",
)  # fmt: skip

#: The calls that change a server (recorded in `Cluster.changes`, with the instance that made them).
CHANGES = (
    "change_master", "start_replication", "stop_replication", "remove_replication", "set_read_only",
    "wait_commits_landed", "write_canary",
)  # fmt: skip


class SimDriver(ServerDriver):
    kind = "ferry"
    counts_commits_in_flight = True
    #: MariaDB's behaviour where it differs from ferryd's (see the module's doc).
    mariadb = False

    def __init__(self, cluster: Cluster, server: Server, instance: Instance, faults: FaultPlan, rtt_s: float) -> None:
        self.cluster = cluster
        self.server = server
        self.instance = instance
        self.faults = faults
        self.address = server.admin_address
        self.protocol_address = server.address
        self._half_s = rtt_s / 2

    # -- the way every call goes ---------------------------------------------------------------------------------

    async def _call(self, name: str, effect: Callable[[], Awaitable[T]]) -> T:
        instance = self.instance
        # ferryd's fencing (docs/node-api.md): the token is the one of when the call was sent, before any pause.
        acting = None if self.mariadb or not name.startswith(FENCED) else fencing.current()
        fence = None if acting is None else acting.header()
        if instance.crashed.is_set():
            await instance.frozen()
        fault = self.faults.decide(instance, f"server {self.server.name}", name, now())
        await asyncio.sleep(self._half_s)
        if instance.crashed.is_set():
            await instance.frozen()
        if fault in (Fault.unreachable, Fault.lost_before):
            raise ServerUnreachable(self.address, "timeout", f"{name}: no answer ({fault.value})")
        if fault is Fault.crash_before:
            instance.crash(f"before {name} on {self.server.name}")
            await instance.frozen()
        if self.server.down:
            raise ServerUnreachable(self.address, "timeout", f"{name}: no answer (the server is down)")
        self.cluster.advance(now())
        if fence is not None:
            self._admit(fence)
        if name.startswith(CHANGES):  # it reached the server (even if the server refuses it, or it fails midway)
            in_flight = fault is Fault.crash_before and instance.woke_at is not None
            self.cluster.changes.append(Change(now(), instance.name, self.server.name, name, in_flight))
        result = await effect()
        await asyncio.sleep(self._half_s)
        if fault is Fault.crash_after:
            instance.crash(f"after {name} on {self.server.name}")
        if instance.crashed.is_set():
            await instance.frozen()
        if fault is Fault.lost_after:
            raise ServerUnreachable(self.address, "timeout", f"{name}: no answer ({fault.value})")
        return result

    def _admit(self, fence: str) -> None:
        """ferryd's fencing: a change carrying a token lower than the highest this server has seen in its scope is
        refused (`stale_fence`) and does nothing; a higher one is remembered (the node's `fences.json`)."""
        scope, token_text = fence.rsplit(":", 1)
        token, highest = int(token_text), self.server.fences.get(scope)
        if highest is not None and token < highest:
            raise fencing.stale(self.address, f"fencing token {token} of scope '{scope}' is stale: seen {highest}")
        self.server.fences[scope] = token

    def _connection(self, name: str) -> Connection:
        found = self.server.connections.get(name)
        if found is None:
            raise ServerNotFound(self.address, "not_found", f"no replication connection {name!r}")
        return found

    # -- reads ---------------------------------------------------------------------------------------------

    async def status(self) -> ServerStatus:
        async def read() -> ServerStatus:
            s = self.server
            return ServerStatus(
                server_id=s.server_id, read_only=s.read_only, positions=self._positions(),
                connections=self._connections(), replicas=(), listen_address=s.address,
            )  # fmt: skip

        return await self._call("status", read)

    async def positions(self) -> Positions:
        async def read() -> Positions:
            return self._positions()

        return await self._call("positions", read)

    async def replica_connections(self) -> tuple[ReplicaConnection, ...]:
        async def read() -> tuple[ReplicaConnection, ...]:
            return self._connections()

        return await self._call("replica_connections", read)

    def _positions(self) -> Positions:
        s = self.server
        return Positions(
            binlog=s.binlog_pos(), slave=s.slave_pos_text(), current=position_text(s.current_pos().values()),
            binlog_state=s.binlog_state(),
        )  # fmt: skip

    def _connections(self) -> tuple[ReplicaConnection, ...]:
        return tuple(self._reported(c) for c in self.server.connections.values())

    def _reported(self, c: Connection) -> ReplicaConnection:
        master = self.cluster.master_of(c)
        if master is not None and master.down:
            master = None
        error = c.last_error
        if c.running:
            io = IoState.connected if c.connected else IoState.connecting
            if c.relay:
                entry, received_at = c.relay[0]
                waiting = replication.due(c, entry, received_at) > self.cluster.now
                sql = SqlState.delaying if waiting and c.settings.delay_s else SqlState.applying
            else:
                sql = SqlState.waiting_for_relay
        else:
            io = IoState.error if error is not None and error.side == "io" else IoState.stopped
            sql = SqlState.error if error is not None and error.side == "sql" else SqlState.stopped
            if c.until_reached:
                sql = SqlState.until_reached
        lag: dict[int, DomainLag] = {}
        if master is not None:
            for domain, newest in master.last_in_domain.items():
                behind = max(0, newest[2] - self.server.seq_of(domain))
                lag[domain] = DomainLag(transactions=behind, seconds=0.0)
        heard = master.binlog_pos() if master is not None and c.connected else ""
        return ReplicaConnection(
            name=c.name, master_address=c.master_address, running=c.running, io_state=io, sql_state=sql,
            received_position=position_text(c.received.values()), applied_position=self.server.slave_pos_text(),
            master_position=heard, lag=lag, last_error=error,
            until=None if c.until is None else ",".join(f"{d}-0-{q}" for d, q in sorted(c.until.items())),
            delay_s=c.settings.delay_s, settings=c.settings,
        )  # fmt: skip

    # -- replication changes -------------------------------------------------------------------------------

    async def change_master(self, connection: str, change: ChangeMaster) -> None:
        async def do() -> None:
            s = self.server
            found = s.connections.get(connection)
            if found is not None and found.running:
                raise ServerConflict(self.address, "conflict", f"connection {connection!r} is running")
            if change.file is not None:
                raise ServerBadRequest(self.address, "bad_request", "binlog coordinates are not simulated")
            if change.position is not None:
                if any(c.running for c in s.connections.values()):
                    raise ServerConflict(
                        self.address, "conflict", "an explicit position needs every connection stopped"
                    )
                s.slave_pos = parse_position(change.position)
            settings = change.settings or ConnectionSettings(
                delay_s=change.delay_s, ignore_duplicates=change.ignore_duplicates, heartbeat_ms=change.heartbeat_ms
            )
            latency = found.latency_s if found is not None else self.cluster.rng.uniform(0.0005, 0.004)
            s.connections[connection] = Connection(
                name=connection, master_address=change.master_address, use_gtid=change.use_gtid, settings=settings,
                latency_s=latency,
            )  # fmt: skip

        await self._call(f"change_master {connection!r} → {change.master_address}", do)

    async def start_replication(self, connection: str, until: str | None = None) -> None:
        async def do() -> None:
            c = self._connection(connection)
            if c.running:
                if self.mariadb:
                    return  # Note 1254: the slave is already running
                raise ServerConflict(self.address, "conflict", f"connection {connection!r} is already running")
            c.running, c.last_error, c.until_reached = True, None, False
            c.until = None if until is None else {d: g[2] for d, g in parse_position(until).items()}
            if c.until is not None and replication.until_done(self.server, c.until):
                c.running, c.until_reached = False, True
                return
            master = self.cluster.master_of(c)
            replication.connect(self.server, c, None if master is None or master.down else master, self.cluster.now)

        await self._call(f"start_replication {connection!r}", do)

    async def stop_replication(self, connection: str) -> None:
        async def do() -> None:
            c = self._connection(connection)
            c.running, c.connected, c.relay = False, False, []

        await self._call(f"stop_replication {connection!r}", do)

    async def remove_replication(self, connection: str) -> None:
        async def do() -> None:
            self._connection(connection)
            del self.server.connections[connection]  # stopped first (ferryd's DELETE, MariaDB's driver after 1198)

        await self._call(f"remove_replication {connection!r}", do)

    # -- fencing -----------------------------------------------------------------------------------------------

    async def raise_fence(self) -> bool:
        if self.mariadb or fencing.current() is None:
            return False  # MariaDB keeps no fencing token

        async def do() -> bool:
            return True  # `_call` admitted (recorded) the token

        return await self._call("raise_fence", do)

    # -- read-only and waits -------------------------------------------------------------------------------

    async def set_read_only(self, read_only: bool, *, confirm: bool = True) -> bool:
        async def do() -> bool:
            self.cluster.set_read_only(self.server, read_only, self.instance.name)
            if read_only and self.mariadb:
                await self._landed()
            return self.server.read_only

        return await self._call(f"set_read_only {read_only}", do)

    async def _landed(self) -> None:
        """Waits until the commits in flight now have landed."""
        last = max((c.lands_at for c in self.server.in_flight), default=now())
        await asyncio.sleep(max(0.0, last - now()))
        self.cluster.advance(now())

    async def wait_commits_landed(self, timeout_s: float) -> WritesStopped:
        if self.mariadb:
            return await self._call("wait_commits_landed", self._position_once_read_only)

        async def do() -> WritesStopped:
            started = now()
            self.cluster.set_read_only(self.server, True, self.instance.name)
            in_flight = list(self.server.in_flight)
            last = max((c.lands_at for c in in_flight), default=started)
            if last - started > timeout_s:
                await asyncio.sleep(timeout_s)
                raise ServerConflict(self.address, "commits_in_flight", f"{len(in_flight)} commit(s) still in flight")
            await asyncio.sleep(last - started)
            self.cluster.advance(now())
            return WritesStopped(self.server.binlog_pos(), len(in_flight), now() - started)

        return await self._call("wait_commits_landed", do)

    async def _position_once_read_only(self) -> WritesStopped:
        if not self.server.read_only:
            raise ServerConflict(self.address, "read_only_off", "read_only is off: client writes did not stop")
        return WritesStopped(self.server.binlog_pos(), None, 0.0)

    async def wait_for_position(self, position: str, timeout_s: float) -> WaitResult:
        target = parse_position(position)

        async def do() -> WaitResult:
            deadline = now() + timeout_s
            while True:
                self.cluster.advance(now())
                if self.server.reached(target):
                    return WaitResult(True, self.server.binlog_pos())
                if now() >= deadline:
                    return WaitResult(False, self.server.binlog_pos())
                upcoming = self.cluster.next_change()
                wake = deadline if upcoming is None else min(max(upcoming, now()), deadline)
                await asyncio.sleep(wake - now())

        return await self._call(f"wait_for_position {position}", do)

    # -- the rest of the interface -------------------------------------------------------------------------------

    async def recent_events(self, limit: int, domain: int | None = None, before: int | None = None) -> EventsPage:
        async def read() -> EventsPage:
            found = []
            for index in range(len(self.server.binlog) - 1, -1, -1):
                gtid = self.server.binlog[index].gtid
                if (domain is None or gtid[0] == domain) and (before is None or index < before):
                    found.append(
                        BinlogTransaction(
                            gtid=f"{gtid[0]}-{gtid[1]}-{gtid[2]}",
                            domain=gtid[0],
                            server_id=gtid[1],
                            seq_no=gtid[2],
                            commit_id=None,
                            commit_ts_us=None,
                            file=None,
                            offset=index,
                        )  # fmt: skip
                    )
                if len(found) == limit:
                    break
            return EventsPage(tuple(found), None)

        return await self._call("recent_events", read)

    async def checksums(self) -> Checksums:
        async def read() -> Checksums:
            return Checksums(position=self.server.binlog_pos())

        return await self._call("checksums", read)

    async def write_canary(self, domain: int, key: str, fields: Mapping[str, object]) -> str:
        async def do() -> str:
            if self.server.read_only:
                raise ServerConflict(self.address, "READ_ONLY", "the node is read-only")
            gtid = self.server.commit(domain, self.cluster.now)
            self.cluster.acked.append(Acked(gtid, self.server.id, self.cluster.now, self.cluster.now))
            return f"{gtid[0]}-{gtid[1]}-{gtid[2]}"

        return await self._call("write_canary", do)

    async def read_canaries(self, keys: list[str]) -> dict[str, dict[str, object] | None]:
        async def read() -> dict[str, dict[str, object] | None]:
            return dict.fromkeys(keys)

        return await self._call("read_canaries", read)


class SimMariadbDriver(SimDriver):
    kind = "mariadb"
    delay_setting = "MASTER_DELAY"
    mariadb = True


class SimDriverFactory:
    """What `ClusterSnapshot.take` asks of a `DriverFactory`: one driver per server (of the cluster's flavour), all
    of one API instance."""

    def __init__(
        self, cluster: Cluster, instance: Instance, faults: FaultPlan, rng: random.Random, *, mariadb: bool = False
    ) -> None:
        self.driver_class = SimMariadbDriver if mariadb else SimDriver
        self.cluster = cluster
        self.instance = instance
        self.faults = faults
        self.rtt_s = {s.admin_address: rng.uniform(0.0002, 0.002) for s in cluster.servers.values()}
        self._drivers: dict[str, SimDriver] = {}

    def credentials_for(self, cluster: Any) -> ServerCredentials:
        return NO_CREDENTIALS

    def for_server(self, server: Any, cluster: Any = None) -> ServerDriver:
        """The failover monitor's way in (a registered server's row)."""
        return self.for_address(server.kind, server.admin_address)

    def for_address(
        self, kind: Any, admin_address: str, credentials: Any = None, protocol_address: str | None = None
    ) -> ServerDriver:
        driver = self._drivers.get(admin_address)
        if driver is None:
            server = next(s for s in self.cluster.servers.values() if s.admin_address == admin_address)
            driver = self.driver_class(self.cluster, server, self.instance, self.faults, self.rtt_s[admin_address])
            self._drivers[admin_address] = driver
        return driver
