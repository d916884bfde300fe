"""What must hold after every schedule (once the operation, or its reconcile, ended and replication had time to
settle), each a sentence naming what broke:

- never two writable servers of the moving cluster at once (recorded by the cluster at each read-only change);
- no acknowledged write lost: every acknowledged GTID is on the final master (the one writable server);
- no errant GTID: no server holds a transaction of the cluster's domains that the final master lacks;
- every server replicates from a live source that leads to the final master, without error, and has converged
  (all the master has) — when the outcome claims the moves done or put back;
- every proxy routes writes to the final master (a proxy recorded as having missed a move is brought in line by the
  collector afterwards, and is left out);
- the recorded outcome is true to the servers: succeeded or rolled forward → the candidate is the master; undone,
  or failed having changed nothing → the old master still is; and a move is rolled forward only past its point of
  no return — the candidate had been made writable before the operation stopped.

Outcomes: `succeeded`, `undone`, `rolled_forward`, `unchanged` (failed, nothing was changed), `moved_unverified`
(the candidate is the master, the verification failed and says what), `incomplete` (a compensation or repair could
not do everything and says so: only the safety invariants apply)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.simulation.cluster import Acked, Cluster
from tests.simulation.servers import Server, gtid_text
from tests.simulation.topology import Topology

#: Outcomes that claim the servers are as they should be.
COMPLETE = ("succeeded", "undone", "rolled_forward", "unchanged")
#: The master each outcome claims: the candidate, or the old master.
CANDIDATE_MASTER = ("succeeded", "rolled_forward", "moved_unverified")
OLD_MASTER = ("undone", "unchanged")


@dataclass(frozen=True)
class Outcome:
    kind: str
    #: `operation` (the live run and its guard) or `reconcile` (after the API crashed).
    by: str
    detail: str
    #: The candidate (control plane id) when the operation had chosen one.
    candidate: int | None
    #: Whether the candidate had been made writable when the operation stopped (crash or failure).
    candidate_writable_at_stop: bool


@dataclass(frozen=True)
class Violation:
    #: Which invariant: split_brain, outcome, point_of_no_return, no_master, lost_write, errant, replication,
    #: other_source, proxy.
    kind: str
    text: str
    #: For lost (and so errant) writes: every one was admitted before a read-only on of its server and landed after
    #: it (a commit in flight across a fence).
    in_flight: bool = False

    def __str__(self) -> str:
        return f"{self.kind}: {self.text}"


def check(cluster: Cluster, topology: Topology, outcome: Outcome, stale_proxies: set[str]) -> list[Violation]:
    found = [Violation("split_brain", s) for s in cluster.split_brain]
    domains = set(topology.domains)
    writable = cluster.writable_main()
    master = writable[0] if len(writable) == 1 else None
    old = cluster.servers[topology.master]
    if outcome.kind in CANDIDATE_MASTER or outcome.kind in OLD_MASTER:
        expected = old if outcome.kind in OLD_MASTER else cluster.servers.get(outcome.candidate or -1)
        if expected is None or master is not expected:
            now = ", ".join(s.name for s in writable) or "none"
            want = expected.name if expected else "the candidate (unknown)"
            found.append(Violation("outcome", f"recorded {outcome.kind} by the {outcome.by}, so {want} should be the "
                                   f"one writable master; writable: {now}"))  # fmt: skip
    if outcome.kind == "rolled_forward" and not outcome.candidate_writable_at_stop:
        found.append(Violation(
            "point_of_no_return",
            f"rolled forward by the {outcome.by} although the operation stopped before its point of no return: the "
            "candidate had never been made writable (it took no write; a stop there is undone)",
        ))  # fmt: skip
    if master is None:
        if outcome.kind in COMPLETE:
            found.append(Violation("no_master", f"recorded {outcome.kind}, yet {len(writable)} servers are writable"))
        return found
    have = master.gtids(domains)
    lost = [a for a in cluster.acked if a.gtid[0] in domains and a.gtid not in have]
    in_flight = bool(lost) and all(_across_fence(cluster, a) for a in lost)
    if lost:
        shown = ", ".join(f"{gtid_text(a.gtid)} (on {cluster.servers[a.server].name})" for a in lost[:5])
        also = " — each was in flight when its server went read-only" if in_flight else ""
        found.append(Violation("lost_write", f"{len(lost)} acknowledged write(s) not on the master {master.name}: "
                               f"{shown}{also}", in_flight))  # fmt: skip
    lost_gtids = {a.gtid for a in lost}
    for server in cluster.main():
        errant = server.gtids(domains) - have
        if errant:
            shown = ", ".join(gtid_text(g) for g in sorted(errant)[:5])
            found.append(Violation("errant", f"{server.name} has {len(errant)} GTID(s) the master {master.name} lacks: "
                                   f"{shown}", in_flight and errant <= lost_gtids))  # fmt: skip
    if outcome.kind in COMPLETE:
        found += _replication(cluster, topology, master, have)
    if outcome.kind in COMPLETE or outcome.kind == "moved_unverified":
        found += _proxies(cluster, master, stale_proxies)
    return found


def _across_fence(cluster: Cluster, acked: Acked) -> bool:
    """The write was admitted before its server went read-only and landed after."""
    return any(acked.admitted_at < at <= acked.at for at in cluster.read_only_on.get(acked.server, ()))


def _replication(
    cluster: Cluster,
    topology: Topology,
    master: Server,
    have: set[tuple[int, int, int]],
    servers: list[Server] | None = None,
    old: Server | None = None,
) -> list[Violation]:
    """Each of `servers` (every server of the moving cluster when None) follows `master` and has converged. After a
    failover (`old`: the lost master), a server that follows a replica which crashed since is left out (its
    intermediate master's loss is another failover's), one that still follows the old master is not."""
    found = []
    domains = set(topology.domains)
    broken_at: set[str] = set()
    for server in cluster.main() if servers is None else servers:
        if server is master:
            continue
        path, current = [server.name], server
        while current is not master:
            if current.name in broken_at:
                break  # said once, for the server where the path breaks
            live = [
                c for c in current.connections.values()
                if c.running and c.last_error is None and (m := cluster.master_of(c)) is not None and m.group == "main"
            ]  # fmt: skip
            broken = [f"{c.name!r} → {c.master_address}: running={c.running}, error={c.last_error}"
                      for c in current.connections.values()]  # fmt: skip
            if len(live) != 1:
                broken_at.add(current.name)
                found.append(Violation("replication", f"{current.name} does not replicate from one live server of "
                                       f"the cluster ({'; '.join(broken) or 'no connection'})"))  # fmt: skip
                break
            source = cluster.master_of(live[0])
            assert source is not None
            if old is not None and source is old:
                found.append(Violation("replication", f"{server.name} still replicates from the old master {old.name} "
                                       f"({' → '.join([*path, source.name])})"))  # fmt: skip
                break
            if source.down:
                break
            if source.name in path:
                found.append(Violation("replication", f"{server.name} replicates in a circle: "
                                       f"{' → '.join([*path, source.name])}"))  # fmt: skip
                break
            path.append(source.name)
            current = source
        else:
            missing = have - server.gtids(domains)
            if missing:
                words = f"lacks {len(missing)} of its GTIDs (e.g. {gtid_text(min(missing))}) after replication settled"
                found.append(Violation("replication", f"{server.name} follows {master.name} but {words}"))
    if topology.multi_source is not None and topology.other_root is not None:
        replica = cluster.servers[topology.multi_source]
        if replica.down:
            return found
        root = cluster.servers[topology.other_root]
        if not any(c.master_address == root.address and c.running and c.last_error is None
                   for c in replica.connections.values()):  # fmt: skip
            found.append(Violation("other_source", f"{replica.name} no longer replicates from its other source "
                                   f"{root.name}"))  # fmt: skip
    return found


def _proxies(cluster: Cluster, master: Server, stale: set[str]) -> list[Violation]:
    found = []
    for proxy in cluster.proxies.values():
        if proxy.name in stale:
            continue
        routed = [cluster.servers[i] for i in sorted(proxy.states) if proxy.states[i] == "ready"]
        writers = [s.name for s in routed if not s.read_only and not s.down]
        if writers != [master.name]:
            states = ", ".join(f"{cluster.servers[i].name} {st}" for i, st in sorted(proxy.states.items()))
            found.append(Violation("proxy", f"{proxy.name} sends writes to {writers or 'nobody'}, not the master "
                                   f"{master.name} ({states})"))  # fmt: skip
    return found
