"""Violations the simulation finds in today's code that are known and not yet fixed, each with a seed that shows it.

A violation matching one of these does not fail the sweep (test_orchestrator_simulation.py lists it); its seed is
run by a strict expected-failure test, so the day it is fixed that test says so and the entry goes. Anything else
the simulation finds fails."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.simulation.invariants import Violation
from tests.simulation.schedule import Report


@dataclass(frozen=True)
class KnownIssue:
    name: str
    #: What is wrong, where, in a sentence or two.
    why: str
    matches: Callable[[Report, Violation], bool]
    #: A schedule that shows it (FERRY_SIM_SEED=<seed> replays it).
    seed: int
    #: Which schedules show it: `switchover` (schedule.py) or `failover` (failover_schedule.py).
    schedule: str = "switchover"


def _leveled_other_domain(report: Report, v: Violation) -> bool:
    return v.kind == "replication" and "REPLICA_AHEAD" in v.text and "domain 7:" in v.text


def _peer_not_drained(report: Report, v: Violation) -> bool:
    """The write lost, the peer holding it errant, and its connection to the new master refused (it is ahead)."""
    if "candidate chosen by the orchestrator" in report.topology:
        return False
    if not any(x.kind == "errant" for x in report.violations):
        return False
    return v.kind in ("lost_write", "errant") or (
        v.kind == "replication" and ("DIVERGED" in v.text or "REPLICA_AHEAD" in v.text)
    )


def _leveling_moves_other_domain_back(report: Report, v: Violation) -> bool:
    return (v.kind == "other_source" and "bring_level passed" in report.steps) or (
        "OUT_OF_ORDER" in v.text and "applying 7-" in v.text
    )


#: Found by the failover simulation (failover_schedule.py): each a real gap of the failover executor, its guard or
#: the reconciler's repair_failover.
FAILOVER_KNOWN: tuple[KnownIssue, ...] = (
    KnownIssue(
        "failover_leveling_copies_another_masters_domain",
        "bring_level levels the candidate from a multi-source peer with START … UNTIL the peer's whole position, so "
        "the candidate takes part of the other master's domain; that peer, repointed to the candidate, is then ahead "
        "of it in that domain and its connection stops with REPLICA_AHEAD.",
        matches=_leveled_other_domain,
        seed=17,
        schedule="failover",
    ),
    KnownIssue(
        "failover_named_candidate_peers_not_drained",
        "With a named candidate, drain_relay_logs waits for that one alone (candidate_pool holds only it), and "
        "bring_level compares what the peers have applied: a peer still applying its relay log ends with an "
        "acknowledged write the new master lacks — lost there, errant on the peer.",
        matches=_peer_not_drained,
        seed=1521,
        schedule="failover",
    ),
    KnownIssue(
        "failover_leveling_moves_other_domain_back",
        "level_with reads the candidate's position, then stops its connections: a multi-source candidate's "
        "connection to the cluster's other master applies meanwhile, and the explicit position the leveling sets "
        "(plan.start, plan.restored: gtid_slave_pos is one for every connection) moves that domain back; started "
        "again, the connection re-applies what it had and stops (OUT_OF_ORDER).",
        matches=_leveling_moves_other_domain_back,
        seed=1220,
        schedule="failover",
    ),
)

#: Of the switchover's none is open: the three this simulation found first (no_return's fence missing ferryd's commits
#: in flight, seed 3631; a multi-source candidate's other connection left stopped, seed 658; a move completed before
#: its point of no return when the old master could not be read, seed 7216) are fixed, and their seeds run in every
#: sweep.
KNOWN: tuple[KnownIssue, ...] = FAILOVER_KNOWN


def known(report: Report, violation: Violation) -> KnownIssue | None:
    return next((k for k in KNOWN if k.schedule == report.kind and k.matches(report, violation)), None)
