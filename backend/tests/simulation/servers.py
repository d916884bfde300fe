"""One simulated server of MariaDB-style GTID replication: its binlog (every transaction it logged, with its GTID),
the positions derived from it (gtid_binlog_pos, gtid_binlog_state, gtid_slave_pos, gtid_current_pos), its read-only
flag, its client commits in flight, and its named replication connections (replication.py moves their data).

A GTID is a tuple `(domain, server_id, seq)`; position text is canonical (`0-1-100,1-2-50`, sorted by domain)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ferry_control.drivers.base import ConnectionSettings, ReplicationError

Gtid = tuple[int, int, int]


def gtid_text(gtid: Gtid) -> str:
    return f"{gtid[0]}-{gtid[1]}-{gtid[2]}"


def position_text(gtids: Iterable[Gtid]) -> str:
    """Canonical text of GTIDs: sorted by domain (then server_id for a binlog state)."""
    return ",".join(gtid_text(g) for g in sorted(gtids))


def parse_position(text: str) -> dict[int, Gtid]:
    found: dict[int, Gtid] = {}
    for part in text.split(","):
        if part.strip():
            domain, server, seq = (int(x) for x in part.strip().split("-"))
            found[domain] = (domain, server, seq)
    return found


class Entry(NamedTuple):
    """One transaction in a server's binlog."""

    gtid: Gtid
    #: When its origin committed it (a delayed replica applies it `delay_s` after this).
    committed_at: float
    #: When this server logged it (its replicas receive it their connection's latency after this).
    logged_at: float


@dataclass
class Commit:
    """A client commit admitted (the server was writable then) that lands in the binlog at `lands_at`."""

    domain: int
    lands_at: float
    writer: int
    admitted_at: float


@dataclass
class Connection:
    """A named replication connection (CHANGE MASTER's settings and, while it runs, its stream)."""

    name: str
    master_address: str
    use_gtid: str = "slave_pos"
    settings: ConnectionSettings = field(default_factory=ConnectionSettings)
    running: bool = False
    #: Seconds from the master logging a transaction to this connection receiving it.
    latency_s: float = 0.002
    last_error: ReplicationError | None = None
    #: START … UNTIL: per domain, the last seq_no to apply (None: no UNTIL).
    until: dict[int, int] | None = None
    until_reached: bool = False
    #: Connected to its master (False while it runs and the address names no server).
    connected: bool = False
    #: The next index of the master's binlog to look at, and per domain the index through which the start position
    #: says the replica has everything.
    cursor: int = 0
    skip_through: dict[int, int] = field(default_factory=dict)
    #: Received and not yet applied: (entry, received at).
    relay: list[tuple[Entry, float]] = field(default_factory=list)
    received: dict[int, Gtid] = field(default_factory=dict)


class Server:
    """A server's replication state; `replication.py` and the cluster change it, the driver reads and moves it."""

    def __init__(self, *, id: int, server_id: int, name: str, host: str, group: str) -> None:
        #: The control plane's id (the registered server's), and the server's own server_id (distinct on purpose).
        self.id = id
        self.server_id = server_id
        self.name = name
        self.host = host
        self.address = f"{host}:3306"
        self.admin_address = f"{host}:8080"
        #: `main` (the cluster whose master moves) or `other` (a root only a multi-source replica follows).
        self.group = group
        self.read_only = True
        #: ferryd's fencing tokens: the highest seen per scope (kept on disk: a restart keeps them).
        self.fences: dict[str, int] = {}
        self.binlog: list[Entry] = []
        self.index: dict[Gtid, int] = {}
        self.last_in_domain: dict[int, Gtid] = {}
        self.state: dict[tuple[int, int], Gtid] = {}
        self.max_seq: dict[int, int] = {}
        self.slave_pos: dict[int, Gtid] = {}
        self.connections: dict[str, Connection] = {}
        self.in_flight: list[Commit] = []
        #: Crashed or cut off from everyone (control plane, clients, replicas): it answers nothing, sends nothing.
        self.down = False

    # -- positions ------------------------------------------------------------------------------------------

    def binlog_pos(self) -> str:
        return position_text(self.last_in_domain.values())

    def binlog_state(self) -> str:
        return position_text(self.state.values())

    def slave_pos_text(self) -> str:
        return position_text(self.slave_pos.values())

    def current_pos(self) -> dict[int, Gtid]:
        """Per domain: the newest GTID this server wrote itself when newer than gtid_slave_pos, else gtid_slave_pos."""
        current = dict(self.slave_pos)
        for (domain, server), gtid in self.state.items():
            if server != self.server_id:
                continue
            have = current.get(domain)
            if have is None or gtid[2] > have[2]:
                current[domain] = gtid
        return current

    def gtids(self, domains: Iterable[int] | None = None) -> set[Gtid]:
        wanted = None if domains is None else set(domains)
        return {g for g in self.index if wanted is None or g[0] in wanted}

    def reached(self, target: dict[int, Gtid]) -> bool:
        """The binlog position is ahead of `target` in each of its domains (MASTER_GTID_WAIT)."""
        for domain, gtid in target.items():
            have = self.last_in_domain.get(domain)
            if have is None or have[2] < gtid[2]:
                return False
        return True

    # -- changes --------------------------------------------------------------------------------------------

    def log(self, gtid: Gtid, committed_at: float, at: float) -> Entry:
        """Appends a transaction to the binlog (its times kept in order)."""
        binlog = self.binlog
        if binlog and binlog[-1].logged_at > at:
            at = binlog[-1].logged_at
        entry = Entry(gtid, committed_at, at)
        domain, server, seq = gtid
        self.index[gtid] = len(binlog)
        binlog.append(entry)
        self.last_in_domain[domain] = gtid
        self.state[(domain, server)] = gtid
        if seq > self.max_seq.get(domain, 0):
            self.max_seq[domain] = seq
        return entry

    def commit(self, domain: int, at: float) -> Gtid:
        """A client transaction of `domain` lands: the next seq_no of the domain, this server's id."""
        seq = max(self.max_seq.get(domain, 0), self.slave_pos.get(domain, (0, 0, 0))[2]) + 1
        gtid = (domain, self.server_id, seq)
        self.log(gtid, at, at)
        return gtid

    def seq_of(self, domain: int) -> int:
        """What this server has in `domain`: the highest seq_no logged or applied."""
        return max(self.max_seq.get(domain, 0), self.slave_pos.get(domain, (0, 0, 0))[2])
