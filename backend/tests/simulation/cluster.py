"""The in-memory cluster: its servers, the client writers and the proxies in front of it, moved forward lazily in
virtual time.

Nothing runs between two looks: `advance(t)` computes what happened up to `t` — each writer's commits at their
times (admitted by a writable server, landing a commit latency later: acknowledged then), and replication (each
connection takes what its master logged, by the times it was logged) — so a client commit sees exactly what the
server had at that moment (replication is brought up to a commit's time first where the server also replicates).
Between two driver calls or proxy commands nothing the control plane changes moves, so this is exact. The cluster
also records what the invariants need as it goes: every acknowledged GTID, and any moment two servers of the moving
cluster were writable at once."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tests.simulation import replication
from tests.simulation.servers import Commit, Connection, Gtid, Server


@dataclass
class Writer:
    """A client that commits in `domain` every `period_s`: through `proxy` when given (to the server it routes
    writes to), else to whichever server it may write to is writable."""

    id: int
    domain: int
    period_s: float
    next_at: float
    #: The servers it writes to directly (by control plane id), when it has no proxy.
    targets: tuple[int, ...]
    proxy: str | None = None
    stopped: bool = False
    refused: int = 0


@dataclass
class Acked:
    """An acknowledged client write: its GTID, the server (control plane id), when it landed and when it was
    admitted (the server was writable then)."""

    gtid: Gtid
    server: int
    at: float
    admitted_at: float


@dataclass
class Proxy:
    """An HAProxy in front of the cluster: per server (control plane id), its state in the writer backend
    (`ready`, `drain`, `maint`). Writes go to a ready server that is writable (its health check passes)."""

    name: str
    cluster_id: int
    states: dict[int, str] = field(default_factory=dict)
    health: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Change:
    at: float
    by: str
    target: str
    call: str
    in_flight: bool = False


class Cluster:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = 0.0
        self.servers: dict[int, Server] = {}
        self.by_address: dict[str, Server] = {}
        self.writers: list[Writer] = []
        self.proxies: dict[str, Proxy] = {}
        self.acked: list[Acked] = []
        #: Moments two servers of the moving cluster were writable at once (what, when).
        self.split_brain: list[str] = []
        #: Control plane ids of servers whose read-only went off through a driver, with when; and every time a
        #: server's read-only went on.
        self.made_writable: dict[int, float] = {}
        self.read_only_on: dict[int, list[float]] = {}
        #: Every change the control plane made to a server or a proxy, in order: when, by which API instance, to
        #: what, which call, and whether it was the call a paused instance had pending when it paused (sent once it
        #: woke: past every check of the lock, which no fencing at the lock can stop; only a server that keeps the
        #: token refuses it — a ferryd's does, driver.py; MariaDB and proxies keep none).
        self.changes: list[Change] = []
        self.commit_latency_s = (0.0, 0.002)
        self._pending: list[tuple[float, Server, Commit]] = []

    # -- building ---------------------------------------------------------------------------------------------

    def add(self, server: Server) -> Server:
        self.servers[server.id] = server
        self.by_address[server.address] = server
        return server

    def master_of(self, connection: Connection) -> Server | None:
        return self.by_address.get(connection.master_address)

    def main(self) -> list[Server]:
        return [s for s in self.servers.values() if s.group == "main"]

    def writable_main(self) -> list[Server]:
        """The servers of the moving cluster that take writes now (one that is down takes none)."""
        return [s for s in self.main() if not s.read_only and not s.down]

    # -- time -----------------------------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Everything that happens up to `t`, in time order."""
        while True:
            tick = land = float("inf")
            for writer in self.writers:
                if not writer.stopped and writer.next_at < tick:
                    tick = writer.next_at
            for pending in self._pending:
                if pending[0] < land:
                    land = pending[0]
            at = tick if tick < land else land
            if at > t:
                break
            self.now = max(self.now, at)
            if land <= tick:
                self._land(at)
            else:
                for writer in self.writers:
                    if not writer.stopped and writer.next_at == at:
                        self._admit(writer, at)
                        writer.next_at = at + writer.period_s
        self.replicate(t)
        self.now = max(self.now, t)

    def replicate(self, t: float) -> None:
        streams = [
            (server, connection, self.by_address.get(connection.master_address))
            for server in self.servers.values()
            for connection in server.connections.values()
            if connection.running
        ]
        for _ in range(8):
            changed = False
            for server, connection, master in streams:
                changed |= replication.pump(server, connection, master, t)
            if not changed:
                return

    def next_change(self) -> float | None:
        """When anything next happens by itself (a commit, a replicated transaction), None when nothing will."""
        times = [w.next_at for w in self.writers if not w.stopped]
        times += [p[0] for p in self._pending]
        for server in self.servers.values():
            for connection in server.connections.values():
                at = replication.next_change(server, connection, self.master_of(connection))
                if at is not None:
                    times.append(at)
        return min(times) if times else None

    # -- clients --------------------------------------------------------------------------------------------

    def _target(self, writer: Writer) -> Server | None:
        if writer.proxy is not None:
            proxy = self.proxies[writer.proxy]
            ready = [self.servers[i] for i in sorted(proxy.states) if proxy.states[i] == "ready"]
            candidates = [s for s in ready if not s.read_only and not s.down]
        else:
            candidates = [s for i in writer.targets if not (s := self.servers[i]).read_only and not s.down]
        return self.rng.choice(candidates) if candidates else None

    def _admit(self, writer: Writer, at: float) -> None:
        server = self._target(writer)
        if server is None:
            writer.refused += 1
            return
        low, high = self.commit_latency_s
        commit = Commit(writer.domain, at + self.rng.uniform(low, high), writer.id, at)
        server.in_flight.append(commit)
        self._pending.append((commit.lands_at, server, commit))

    def _land(self, at: float) -> None:
        for item in [p for p in self._pending if p[0] == at]:
            self._pending.remove(item)
            _, server, commit = item
            if any(c.running for c in server.connections.values()):
                # A server that replicates and takes client writes: what it applied by now decides the seq_no.
                self.replicate(at)
            server.in_flight.remove(commit)
            self.acked.append(Acked(server.commit(commit.domain, at), server.id, at, commit.admitted_at))

    def go_down(self, server: Server, at: float, *, crashed: bool) -> None:
        """The server stops answering anyone. Crashed: its commits in flight never land; cut off: they land, their
        answers never reach the clients (not acknowledged). Its replicas lose it (they retry, and apply what they
        had received); its own connections stop receiving."""
        self.advance(at)
        server.down = True
        for item in [p for p in self._pending if p[1] is server]:
            self._pending.remove(item)
            server.in_flight.remove(item[2])
            if not crashed:
                server.commit(item[2].domain, self.now)
        for other in self.servers.values():
            for connection in other.connections.values():
                if connection.master_address == server.address:
                    connection.connected = False
        for connection in server.connections.values():
            connection.connected, connection.relay = False, []

    def come_back(self, server: Server, at: float, *, read_only: bool | None = None) -> None:
        """The server answers again (restarted: with `read_only` as its configuration says; else as it was); its
        running connections and its replicas' connect again."""
        self.advance(at)
        server.down = False
        if read_only is not None:
            server.read_only = read_only
        self.replicate(at)

    def stop_writers(self) -> None:
        for writer in self.writers:
            writer.stopped = True

    # -- what the control plane changes ------------------------------------------------------------------------

    def set_read_only(self, server: Server, read_only: bool, by: str) -> None:
        server.read_only = read_only
        if read_only:
            self.read_only_on.setdefault(server.id, []).append(self.now)
        else:
            self.made_writable.setdefault(server.id, self.now)
            writable = self.writable_main()
            if server.group == "main" and len(writable) > 1:
                names = ", ".join(s.name for s in writable)
                self.split_brain.append(f"at {self.now:.6f} s {by} made {server.name} writable while {names} were")

    def proxy_command(self, proxy: Proxy, command: str) -> str | None:
        """One HAProxy runtime command as routing.py sends it; the proxy's error line, or None."""
        words = command.split()
        if words[:2] == ["set", "server"] and len(words) == 5:
            backend, _, server = words[2].partition("/")
            if backend != f"ferry_{proxy.cluster_id}_writer":
                return "No such backend."
            sid = int(server.removeprefix("s"))
            if sid not in proxy.states:
                return f"No such server: {server}"
            if words[3] == "state":
                proxy.states[sid] = words[4]
            elif words[3] == "health":
                proxy.health[sid] = words[4]
            return None
        if words[:3] == ["shutdown", "sessions", "server"]:
            backend, _, _ = words[3].partition("/")
            return None if backend == f"ferry_{proxy.cluster_id}_writer" else "No such backend."
        return f"Unknown command: {command}"
