"""How a simulated connection moves data, by ferryd's and MariaDB's rules: at start the master finds where the
replica's position (gtid_slave_pos, or gtid_current_pos) is in its binlog — a GTID it lacks in a domain it wrote is
an IO error (REPLICA_AHEAD when the replica is beyond the master's newest, else DIVERGED); the replica receives each
transaction its latency after the master logged it and applies it once received and, for a delayed connection,
`delay_s` after its origin committed it; applying checks strict mode (a seq_no not above what the replica has in
the domain stops the connection with an SQL error, unless it is a duplicate and `ignore_duplicates` is on), skips
the replica's own server_id (MariaDB's replicate_same_server_id=0), honours domain filters and START … UNTIL, and
logs what it applied (log_slave_updates) and moves gtid_slave_pos."""

from __future__ import annotations

from ferry_control.drivers.base import ReplicationError
from tests.simulation.servers import Connection, Entry, Gtid, Server, gtid_text


def start_position(replica: Server, connection: Connection) -> dict[int, Gtid]:
    return replica.current_pos() if connection.use_gtid == "current_pos" else dict(replica.slave_pos)


def connect(replica: Server, connection: Connection, master: Server | None, now: float) -> None:
    """The connection (running) reaches its master, or stays connecting when the address names no server."""
    connection.relay = []
    if master is None:
        connection.connected = False
        return
    start = start_position(replica, connection)
    skip: dict[int, int] = {}
    for domain, gtid in start.items():
        newest = master.last_in_domain.get(domain)
        if newest is None:
            continue  # the master never wrote this domain: nothing of it to send or skip
        at = master.index.get(gtid)
        if at is not None:
            skip[domain] = at
            continue
        code = "REPLICA_AHEAD" if newest[2] < gtid[2] else "DIVERGED"
        connection.running = False
        connection.connected = False
        connection.last_error = ReplicationError(
            side="io", code=code,
            message=f"domain {domain}: the replica is at {gtid_text(gtid)}, the master's newest is {gtid_text(newest)}",
        )  # fmt: skip
        return
    connection.connected = True
    connection.cursor = 0
    connection.skip_through = skip
    connection.received = dict(start)


def due(connection: Connection, entry: Entry, received_at: float) -> float:
    return max(received_at, entry.committed_at + connection.settings.delay_s)


def next_change(replica: Server, connection: Connection, master: Server | None) -> float | None:
    """When this connection next receives or applies something (None: nothing pending)."""
    if replica.down or not connection.running or master is None:
        return None
    if master.down:  # lost its master: what it received it still applies
        return due(connection, *connection.relay[0]) if connection.relay else None
    if not connection.connected:
        return None
    times = []
    if connection.cursor < len(master.binlog):
        times.append(master.binlog[connection.cursor].logged_at + connection.latency_s)
    if connection.relay:
        entry, received_at = connection.relay[0]
        times.append(due(connection, entry, received_at))
    return min(times) if times else None


def pump(replica: Server, connection: Connection, master: Server | None, now: float) -> bool:
    """Receives and applies what is due by `now`; returns whether anything changed."""
    if not connection.running or replica.down:
        return False
    if master is not None and master.down:
        # Its master is gone (the connection retries): it applies what it had received, and receives nothing.
        return _apply_due(replica, connection, now)
    if not connection.connected:
        if master is None:
            return False
        connect(replica, connection, master, now)
        return True
    assert master is not None
    changed = False
    binlog = master.binlog
    while connection.cursor < len(binlog) and binlog[connection.cursor].logged_at + connection.latency_s <= now:
        entry = binlog[connection.cursor]
        connection.cursor += 1
        changed = True
        domain = entry.gtid[0]
        if connection.cursor - 1 <= connection.skip_through.get(domain, -1):
            continue
        connection.relay.append((entry, entry.logged_at + connection.latency_s))
        connection.received[domain] = entry.gtid
    return _apply_due(replica, connection, now) or changed


def _apply_due(replica: Server, connection: Connection, now: float) -> bool:
    changed = False
    while connection.relay and connection.running:
        entry, received_at = connection.relay[0]
        at = due(connection, entry, received_at)
        if at > now:
            break
        connection.relay.pop(0)
        apply(replica, connection, entry, at)
        changed = True
    return changed


def _filtered(connection: Connection, domain: int) -> bool:
    settings = connection.settings
    if not settings.filters:
        return False
    do = settings.filter_ids("do_domain_ids")
    return (bool(do) and domain not in do) or domain in settings.filter_ids("ignore_domain_ids")


def apply(replica: Server, connection: Connection, entry: Entry, at: float) -> None:
    domain, server, seq = entry.gtid
    until = connection.until
    if until is not None:
        if domain not in until or seq > until[domain]:
            return  # not applied: the connection stops before it (fetched again at the next start)
    if server == replica.server_id:
        return
    have = replica.seq_of(domain)
    if seq <= have:
        if connection.settings.ignore_duplicates and entry.gtid in replica.index:
            return
        connection.running = False
        connection.relay = []
        message = f"applying {gtid_text(entry.gtid)}: seq_no not above {have}, what this server has in domain {domain}"
        connection.last_error = ReplicationError(
            side="sql", code="OUT_OF_ORDER", gtid=gtid_text(entry.gtid), message=message
        )
        return
    if not _filtered(connection, domain):
        replica.log(entry.gtid, entry.committed_at, at)
    replica.slave_pos[domain] = entry.gtid
    if until is not None and until_done(replica, until):
        connection.running = False
        connection.until_reached = True
        connection.relay = []


def until_done(replica: Server, until: dict[int, int]) -> bool:
    return all(replica.seq_of(domain) >= seq for domain, seq in until.items())
