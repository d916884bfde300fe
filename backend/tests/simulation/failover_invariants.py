"""What must hold after a failover schedule (the master lost; the operation, or its reconcile, ended; the old master
perhaps answering again and the failover monitor's fencing pass run; replication settled), each a sentence naming
what broke. Only the servers that survive count — up at the end, the old master aside:

- never two writable servers of the moving cluster at once (recorded at each read-only change), nor at the end;
- the old master fenced: once another server was made writable, the record marks it fenced, and when it answers
  again it is read-only (the monitor's pass made it so);
- no acknowledged write that reached a surviving server lost: each is on the final master (writes only the dead
  master had are the failover's RPO, counted, not a violation);
  (a server an unfinished outcome names as not following is left out of both: its record says so — and so is one
  replicating from it, down a chain: left with it. A failover cannot take what a replica it cannot read has not yet
  passed on: its replicas may still receive the lost master's writes from it after the candidate was chosen);
- no errant GTID: no surviving server holds a transaction of the cluster's domains that the final master lacks;
- the record true: succeeded / rolled forward / moved unverified → the candidate is the one writable server, the
  proxies send writes to it, and (but for moved unverified) every surviving server replicates from it, converged;
  undone / unchanged → no server was made writable, and every surviving replica still has its connection to the old
  master, running, and no temporary leveling connection; incomplete → the safety invariants only."""

from __future__ import annotations

from tests.simulation.cluster import Cluster
from tests.simulation.invariants import COMPLETE, Outcome, Violation, _across_fence, _proxies, _replication
from tests.simulation.servers import Server, gtid_text
from tests.simulation.topology import Topology

PROMOTED = ("succeeded", "rolled_forward", "moved_unverified")
NOT_PROMOTED = ("undone", "unchanged")
LEVEL_PREFIX = "level_"


def check(
    cluster: Cluster,
    topology: Topology,
    outcome: Outcome,
    stale_proxies: set[str],
    *,
    old_fenced: bool,
    sources: dict[int, str],
) -> tuple[list[Violation], int]:
    """The violations, and how many acknowledged writes only the dead master had (the RPO). `old_fenced`: the
    record marks the old master fenced; `sources`: each replica's master address before the loss."""
    found = [Violation("split_brain", s) for s in cluster.split_brain]
    domains = set(topology.domains)
    old = cluster.servers[topology.master]
    surviving = [s for s in cluster.main() if not s.down and s is not old]
    writable = cluster.writable_main()
    if len(writable) > 1:
        found.append(Violation("split_brain", "at the end " + ", ".join(s.name for s in writable) + " are writable"))
    replaced = [
        cluster.servers[i].name for i in cluster.made_writable if i != old.id and cluster.servers[i].group == "main"
    ]
    if replaced:
        if not old_fenced:
            found.append(Violation("fence", f"{', '.join(replaced)} made writable, yet the old master {old.name} is "
                                   "not recorded as fenced (the monitor will not keep it read-only)"))  # fmt: skip
        if not old.down and not old.read_only:
            found.append(Violation("fence", f"the old master {old.name} answers again and is writable after "
                                   f"{', '.join(replaced)} was made writable"))  # fmt: skip
    candidate = cluster.servers.get(outcome.candidate or -1)
    if outcome.kind in PROMOTED and (candidate is None or writable != [candidate]):
        now = ", ".join(s.name for s in writable) or "none"
        want = candidate.name if candidate else "the candidate (unknown)"
        found.append(Violation("outcome", f"recorded {outcome.kind} by the {outcome.by}, so {want} should be the one "
                               f"writable master; writable: {now}"))  # fmt: skip
    if outcome.kind in NOT_PROMOTED:
        if replaced:
            found.append(Violation("outcome", f"recorded {outcome.kind} by the {outcome.by}, yet "
                                   f"{', '.join(replaced)} was made writable"))  # fmt: skip
        found += _left_as_they_were(cluster, surviving, old, sources)
    master = writable[0] if len(writable) == 1 else None
    if master is None:
        return found, 0
    have = master.gtids(domains)
    # Servers an unfinished outcome names as not following: what they hold is said there (a delayed replica left on
    # the old master applies what it had received, which no candidate waited for).
    left = (
        _left_with_named(cluster, surviving, outcome) if outcome.kind in ("moved_unverified", "incomplete") else set()
    )
    others = [s for s in surviving if s is not master and s.name not in left]
    lost, rpo = [], 0
    for acked in cluster.acked:
        if acked.gtid[0] not in domains or acked.gtid in have:
            continue
        if master is not old and acked.server == old.id and not any(acked.gtid in s.index for s in others):
            rpo += 1  # only the dead master had it
        else:
            lost.append(acked)
    in_flight = bool(lost) and all(_across_fence(cluster, a) for a in lost)
    if lost:
        shown = ", ".join(f"{gtid_text(a.gtid)} (on {cluster.servers[a.server].name})" for a in lost[:5])
        found.append(Violation("lost_write", f"{len(lost)} acknowledged write(s) that reached a surviving server "
                               f"are not on the master {master.name}: {shown}", in_flight))  # fmt: skip
    lost_gtids = {a.gtid for a in lost}
    for server in others if master is not old else [s for s in cluster.main() if not s.down]:
        errant = server.gtids(domains) - have
        if errant:
            shown = ", ".join(gtid_text(g) for g in sorted(errant)[:5])
            found.append(Violation("errant", f"{server.name} has {len(errant)} GTID(s) the master {master.name} lacks: "
                                   f"{shown}", in_flight and errant <= lost_gtids))  # fmt: skip
    if outcome.kind in PROMOTED and master is candidate:
        if outcome.kind in COMPLETE:
            found += _replication(cluster, topology, master, have, [master, *others], old)
        found += _proxies(cluster, master, stale_proxies)
    return found, rpo


def _left_with_named(cluster: Cluster, surviving: list[Server], outcome: Outcome) -> set[str]:
    """The servers the outcome names as not following (by label), and those replicating from one of them, down a
    chain: a server below one left behind is left with it (what reaches it comes through that one)."""
    left = {s.name for s in surviving if f"{s.name} (server_id" in outcome.detail}
    grew = True
    while grew:
        grew = False
        for server in surviving:
            if server.name in left:
                continue
            sources = [cluster.master_of(c) for c in server.connections.values()]
            if any(m is not None and m.name in left for m in sources):
                left.add(server.name)
                grew = True
    return left


def _left_as_they_were(
    cluster: Cluster, surviving: list[Server], old: Server, sources: dict[int, str]
) -> list[Violation]:
    """Nothing promoted: each surviving replica keeps its connection to its master, and no leveling connection."""
    found = []
    for server in surviving:
        leveling = [c.name for c in server.connections.values() if c.name.startswith(LEVEL_PREFIX)]
        if leveling:
            found.append(Violation("outcome", f"nothing was promoted, yet {server.name} keeps the temporary leveling "
                                   f"connection(s) {', '.join(map(repr, leveling))}"))  # fmt: skip
        source = sources.get(server.id)
        if source is None:
            continue
        kept = [c for c in server.connections.values() if c.master_address == source]
        if not any(c.running and c.last_error is None for c in kept):
            states = "; ".join(f"{c.name!r} → {c.master_address}: running={c.running}, error={c.last_error}"
                               for c in server.connections.values())  # fmt: skip
            found.append(Violation("outcome", f"nothing was promoted, yet {server.name} no longer replicates from "
                                   f"its master at {source} ({states or 'no connection'})"))  # fmt: skip
    return found
