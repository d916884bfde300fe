"""What must hold after a hub move's schedule (a hub switchover, or a hub failover: the hub lost; the operation, or
its reconcile, ended; the lost hub perhaps answering again and the failover monitor's fencing pass run; replication
settled), each a sentence naming what broke. The roots never move: they are the sources of truth.

- never two writable servers of the moving cluster (the root alone takes writes: a hub move makes nothing
  writable), at any moment nor at the end;
- no errant GTID: no server of the hub's tree holds a transaction no root has;
- nothing acknowledged lost: a server that replicates, down live connections, from every root has every
  transaction the roots have (an acknowledged write missing there is a hole a move left: a lost write);
- every server of the tree replicates from live sources (each connection running, without error, to a server that
  answers) that lead to every root, or is fenced: the lost hub (recorded fenced once another server took its
  connections, and read-only when it answers again); a server an unfinished outcome names as not following is left
  out, and so is one replicating from it, down a chain, or from a replica that crashed and is still down;
- the record true: a hub switchover recorded succeeded or rolled forward → the candidate has each of the hub's
  incoming connections (name, master) running, with their settings less delay and filters, and none to the hub,
  and the hub and the other replicas its plan moves (those that answered) replicate from the candidate, the hub
  with the candidate's old connection's settings less the same, each replica with its own; undone or unchanged →
  the hub has its incoming connections running, and its replicas (the candidate too) replicate from it. A hub
  failover recorded succeeded or rolled forward → the new hub has each of the lost hub's connections running, with
  its own old connection's settings less delay and filters (the live run's and a completion's alike), every other
  replica of the lost hub its plan moves replicates from it, the lost hub is fenced; unchanged → every replica of
  the hub still has its connection to it.
"""

from __future__ import annotations

from dataclasses import replace

from ferry_control.drivers.base import ConnectionSettings
from tests.simulation.cluster import Cluster
from tests.simulation.hub_topology import HubTopology
from tests.simulation.invariants import Outcome, Violation
from tests.simulation.servers import Server, gtid_text

MOVED = ("succeeded", "rolled_forward")
NOT_MOVED = ("undone", "unchanged")


def check(
    cluster: Cluster, topology: HubTopology, outcome: Outcome, *, failover: bool, hub_fenced: bool, moving: list[int]
) -> list[Violation]:
    """`moving`: the hub's replicas the operation's plan moves (the candidate aside: those that answered)."""
    found = [Violation("split_brain", s) for s in cluster.split_brain]
    root = cluster.servers[topology.root]
    roots = [cluster.servers[r] for r in topology.roots()]
    hub = cluster.servers[topology.hub]
    writable = [s.name for s in cluster.writable_main()]
    if writable != [root.name]:
        found.append(Violation("split_brain", f"at the end {', '.join(writable) or 'nothing'} writable, not the root "
                               f"{root.name} alone"))  # fmt: skip
    truth: set[tuple[int, int, int]] = set().union(*(r.gtids() for r in roots))
    tree = [s for s in cluster.main() if s is not root and not s.down]
    for server in tree:
        errant = server.gtids() - truth
        if errant:
            shown = ", ".join(gtid_text(g) for g in sorted(errant)[:5])
            found.append(Violation("errant", f"{server.name} has {len(errant)} GTID(s) no root has: {shown}"))
    # A failover that moved nothing leaves the lost hub's replicas on it: they wait for it, as before; a server
    # below a replica that crashed and is still down waits for it (its loss is another failover's).
    down = [s for s in cluster.main() if s.down and s is not hub]
    left = _left(cluster, tree, outcome, [*down, *([hub] if failover and outcome.kind not in MOVED else [])])
    acked = {a.gtid for a in cluster.acked}
    for server in tree:
        if failover and server is hub:
            continue  # the lost hub: fenced, never repointed
        broken = _broken(cluster, server, roots)
        if broken is None:
            missing = truth - server.gtids()
            if missing:
                lost = sorted(missing & acked)
                kind = "lost_write" if lost else "replication"
                shown = ", ".join(gtid_text(g) for g in (lost or sorted(missing))[:5])
                found.append(Violation(kind, f"{server.name} replicates from every root but lacks {len(missing)} of "
                                       f"their GTIDs ({len(lost)} acknowledged): {shown}"))  # fmt: skip
        elif server.name not in left:
            found.append(Violation("replication", f"{server.name}: {broken}"))
    if failover:
        took = _took_over(cluster, topology)
        if took and outcome.kind in MOVED and not hub_fenced:
            found.append(Violation("fence", f"{took} took the lost hub {hub.name}'s connections, yet {hub.name} is not "
                                   "recorded as fenced"))  # fmt: skip
        if hub_fenced and not hub.down and not hub.read_only:
            found.append(Violation("fence", f"the lost hub {hub.name} is fenced, answers again and is writable"))
    found += _record(cluster, topology, outcome, failover, moving)
    return found


def _left(cluster: Cluster, tree: list[Server], outcome: Outcome, waited: list[Server]) -> set[str]:
    """The servers an unfinished outcome names (by label) — and those of `waited` —, and those replicating from one
    of them, down a chain."""
    left = {s.name for s in waited}
    if outcome.kind not in MOVED and outcome.kind not in NOT_MOVED:
        left |= {s.name for s in tree if f"{s.name} (server_id" in outcome.detail}
    grew = True
    while grew:
        grew = False
        for server in tree:
            if server.name not in left and any(
                (m := cluster.master_of(c)) is not None and m.name in left for c in server.connections.values()
            ):
                left.add(server.name)
                grew = True
    return left


def _broken(cluster: Cluster, server: Server, roots: list[Server]) -> str | None:
    """Why `server` does not replicate, down live connections, from every root (None: it does)."""
    reached: set[str] = set()
    path: list[str] = []

    def walk(current: Server) -> str | None:
        if current in roots:
            reached.add(current.name)
            return None
        if current.name in path:
            return f"replicates in a circle: {' → '.join([*path, current.name])}"
        if not current.connections:
            return f"{current.name} has no replication connection"
        path.append(current.name)
        try:
            for c in current.connections.values():
                source = cluster.master_of(c)
                if not c.running or c.last_error is not None or source is None or source.down:
                    state = "down" if source is not None and source.down else f"running={c.running}"
                    return (f"{current.name}'s connection {c.name!r} → {c.master_address} is not live ({state}, "
                            f"error={c.last_error})")  # fmt: skip
                if (why := walk(source)) is not None:
                    return why
        finally:
            path.pop()
        return None

    why = walk(server)
    if why is not None:
        return why
    missing = [r.name for r in roots if r.name not in reached]
    return f"does not reach the root(s) {', '.join(missing)}" if missing else None


def _took_over(cluster: Cluster, topology: HubTopology) -> str | None:
    """A server other than the hub that has one of the hub's incoming connections (name and master)."""
    for server in cluster.main():
        if server.id in (topology.hub, topology.root):
            continue
        for name, root in topology.incoming.items():
            c = server.connections.get(name)
            if c is not None and c.master_address == cluster.servers[root].address:
                return server.name
    return None


def _follows(cluster: Cluster, server: Server, source: Server) -> bool:
    return any(
        c.running and c.last_error is None and c.master_address == source.address for c in server.connections.values()
    )


def _has_incoming(cluster: Cluster, server: Server, topology: HubTopology) -> list[str]:
    """The hub's incoming connections `server` lacks (or that do not run), in words."""
    missing = []
    for name, root in topology.incoming.items():
        c = server.connections.get(name)
        if c is None or c.master_address != cluster.servers[root].address or not c.running or c.last_error:
            missing.append(repr(name))
    return missing


def _moved_settings(settings: ConnectionSettings) -> ConnectionSettings:
    """A connection's settings re-created on another server: less its delay and filters."""
    return replace(settings, delay_s=0, filters={})


def _settings(cluster: Cluster, topology: HubTopology, new: Server, failover: bool, moving: list[int]) -> list[str]:
    """Where a moved connection lacks the settings the move carries (in words): the candidate's connections to the
    roots have the hub's incoming ones' (a hub switchover) or its own connection to the hub's (a hub failover), less
    delay and filters; the hub's connection to the candidate has the candidate's old connection's, less the same;
    a repointed replica keeps its own."""
    hub = cluster.servers[topology.hub]
    own = next(((name, s) for (i, name), s in topology.settings.items() if i == new.id), None)
    wrong = []
    for name in topology.incoming:
        c = new.connections.get(name)
        if c is None:
            continue
        want = _moved_settings(own[1] if failover and own else topology.settings[(hub.id, name)])
        if c.settings != want:
            wrong.append(f"{new.name}'s {name!r} has {c.settings}, not {want}")
    if not failover and own is not None and not hub.down:
        c = hub.connections.get(own[0])
        if c is not None and c.master_address == new.address and c.settings != _moved_settings(own[1]):
            wrong.append(f"{hub.name}'s {own[0]!r} has {c.settings}, not {_moved_settings(own[1])}")
    for server_id in moving:
        server = cluster.servers[server_id]
        for (i, name), want in topology.settings.items():
            c = server.connections.get(name)
            if i == server_id and c is not None and c.master_address == new.address and c.settings != want:
                wrong.append(f"{server.name}'s {name!r} has {c.settings}, not its own {want}")
    return wrong


def _record(
    cluster: Cluster, topology: HubTopology, outcome: Outcome, failover: bool, moving: list[int]
) -> list[Violation]:
    hub = cluster.servers[topology.hub]
    said = f"recorded {outcome.kind} by the {outcome.by}"
    found: list[Violation] = []
    if outcome.kind in MOVED:
        new = cluster.servers.get(outcome.candidate or -1)
        if new is None:
            return [Violation("outcome", f"{said}, yet no candidate is recorded")]
        if new.down:
            return found
        if lacks := _has_incoming(cluster, new, topology):
            found.append(Violation("outcome", f"{said}, yet {new.name} lacks the hub's connection(s) "
                                   f"{', '.join(lacks)} (or they do not run)"))  # fmt: skip
        if wrong := _settings(cluster, topology, new, failover, moving):
            found.append(Violation("settings", f"{said}, yet a moved connection lacks its settings: "
                                   + "; ".join(wrong)))  # fmt: skip
        if any(c.master_address == hub.address for c in new.connections.values()):
            found.append(Violation("outcome", f"{said}, yet {new.name} still has a connection to {hub.name}"))
        followers = [cluster.servers[r] for r in moving if r != new.id]
        if not failover:
            followers.append(hub)
        for server in followers:
            if not server.down and not _follows(cluster, server, new):
                found.append(Violation("outcome", f"{said}, yet {server.name} does not replicate from {new.name}"))
    elif outcome.kind in NOT_MOVED:
        if not hub.down and (lacks := _has_incoming(cluster, hub, topology)):
            found.append(Violation("outcome", f"{said}, yet the hub {hub.name} lacks its connection(s) "
                                   f"{', '.join(lacks)} (or they do not run)"))  # fmt: skip
        for replica in (cluster.servers[r] for r in topology.replicas):
            if replica.down:
                continue
            if failover:
                if not any(c.master_address == hub.address for c in replica.connections.values()):
                    found.append(Violation("outcome", f"{said}, yet {replica.name} no longer has its connection to "
                                           f"the hub {hub.name}"))  # fmt: skip
            elif not _follows(cluster, replica, hub):
                found.append(Violation("outcome", f"{said}, yet {replica.name} does not replicate from the hub "
                                       f"{hub.name}"))  # fmt: skip
    return found
