"""GTID reasoning the orchestrator needs on top of the control plane's GTID vocabulary (core/gtid.py): errant GTIDs
checked per domain, "ahead of every other server", and the start and stop positions that bring a server level with
a peer by START … UNTIL. The vocabulary's own names are importable from here too, so an executor imports its GTID
words from one place."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ferry_control.core.gtid import (
    Gtid,
    GtidPosition,
    format_position,
    from_gtids,
    gtid_text,
    join_all,
    parse_state,
    per_domain,
    position,
    restrict,
)

__all__ = [
    "ErrantGtid",
    "LevelPlan",
    "ahead_of_all",
    "behind_total",
    "errant_gtids",
    "from_gtids",
    "gtid_text",
    "join_all",
    "level_plan",
    "parse_state",
    "per_domain",
    "position",
    "restrict",
]


@dataclass(frozen=True)
class ErrantGtid:
    """A transaction the candidate has and the master does not."""

    domain: int
    gtid: str
    reason: str


def errant_gtids(
    *,
    candidate_binlog_pos: str,
    candidate_binlog_state: str,
    candidate_server_id: int,
    master_binlog_pos: str,
    master_binlog_state: str,
) -> list[ErrantGtid]:
    """Errant GTIDs of a replica against its master, per domain:

    - the replica's newest GTID in a domain is beyond the master's newest there (or the master has no such domain):
      the replica has transactions in that domain the master never had;
    - the replica's binlog state holds a GTID the replica wrote itself (its own server_id) that the master's binlog
      state does not reach for that (domain, server_id): a local write on the replica, whatever its seq_no.
    """
    found: dict[tuple[int, str], list[str]] = {}
    master_pos = position(master_binlog_pos)
    for gtid in position(candidate_binlog_pos):
        on_master = master_pos.get(gtid.domain)
        if on_master is None:
            found.setdefault((gtid.domain, gtid_text(gtid)), []).append(
                f"the master has no transaction in domain {gtid.domain}"
            )
        elif gtid.seq > on_master.seq:
            found.setdefault((gtid.domain, gtid_text(gtid)), []).append(
                f"seq_no {gtid.seq} is beyond the master's newest GTID {gtid_text(on_master)} in domain {gtid.domain}"
            )
    master_state = {(g.domain, g.server): g.seq for g in parse_state(master_binlog_state)}
    for gtid in parse_state(candidate_binlog_state):
        if gtid.server != candidate_server_id:
            continue
        master_seq = master_state.get((gtid.domain, gtid.server))
        if master_seq is None or master_seq < gtid.seq:
            seen = "none" if master_seq is None else f"{gtid.domain}-{gtid.server}-{master_seq}"
            found.setdefault((gtid.domain, gtid_text(gtid)), []).append(
                f"written by the candidate itself (server_id {gtid.server}); the master's newest from that server "
                f"in domain {gtid.domain} is {seen}"
            )
    return [ErrantGtid(domain, gtid, "; ".join(reasons)) for (domain, gtid), reasons in sorted(found.items())]


def ahead_of_all(mine: GtidPosition, others: Iterable[GtidPosition]) -> bool:
    return all(mine.is_ahead_of(other) for other in others)


def behind_total(mine: GtidPosition, others: Iterable[GtidPosition]) -> int:
    """Transactions the others hold beyond `mine`, summed over domains and servers (how much leveling it needs)."""
    return sum(sum(other.difference(mine).values()) for other in others)


@dataclass(frozen=True)
class LevelPlan:
    """How `target` replicates from a peer to get everything the peer has beyond it."""

    #: The explicit start position (becomes the target's gtid_slave_pos for the leveling connection): the target's
    #: GTID in each domain, capped at the peer's where the peer is behind (a replica ahead of its master in a domain
    #: is refused by the master), without the domains only the peer has (sent from their first event).
    start: str
    #: START … UNTIL: the peer's GTIDs in the domains where it is ahead (the others are not applied).
    until: str
    #: The target's position once level: the join of both, restored as gtid_slave_pos afterwards.
    restored: str


def level_plan(target: GtidPosition, peer: GtidPosition, exclude: Iterable[int] = ()) -> LevelPlan | None:
    """None when the peer has nothing the target lacks. Domains of `exclude` (another master's, which each server
    gets from that master) are never leveled: the target keeps its own GTID there when restored."""
    excluded = set(exclude)
    ahead = [
        g for g in peer if g.domain not in excluded and ((mine := target.get(g.domain)) is None or g.seq > mine.seq)
    ]
    if not ahead:
        return None
    start: list[Gtid] = []
    for gtid in target:
        theirs = peer.get(gtid.domain)
        start.append(theirs if theirs is not None and theirs.seq < gtid.seq else gtid)
    return LevelPlan(
        start=format_position(start),
        until=format_position(ahead),
        restored=str(target.join(from_gtids(g for g in peer if g.domain not in excluded))),
    )
