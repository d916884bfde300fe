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


#: Found by the failover simulation (failover_schedule.py): none is open. Fixed: leveling copying another master's
#: domain from a multi-source peer (seed 17) and moving it back (1220), a named candidate's peers not drained and a
#: candidate that stopped answering once writable left half promoted (1521), a write held only below a replica that
#: did not answer (1581, outside the default range), a late reconcile repointing a delayed replica that had meanwhile
#: applied an acknowledged write the promoted candidate lacks (125: the delayed replicas are now held before the
#: promotion, failover.py `hold_delayed`); their seeds run in test_orchestrator_failover_simulation.py.
FAILOVER_KNOWN: tuple[KnownIssue, ...] = ()


def _unfenced(landed: str, topology: str) -> bool:
    """Whether a call that landed after the takeover went to something that keeps no fencing token: a proxy
    (HAProxy's admin socket), or a server of a MariaDB cluster."""
    return " on proxy " in landed or "MariaDB servers" in topology


def _in_flight(report: Report, violation: Violation) -> bool:
    unfenced = any(_unfenced(landed, report.topology) for landed in report.in_flight)
    return unfenced and violation.kind not in ("fencing", "record")


_IN_FLIGHT_WHY = (
    "an instance paused between a step's check of the lock and a call (faults.py: a pause before the call took "
    "effect) sends that call when it wakes, after another instance's reconcile took the cluster over and repaired "
    "it; the repair is then undone in part when the call went to something that keeps no fencing token: a server of "
    "a MariaDB cluster (no statement or session variable makes MariaDB refuse a change from a holder that lost its "
    "lock) or a proxy (HAProxy's admin socket, whatever the servers' kind). docs/architecture.md says so. ferryd "
    "keeps tokens (X-Ferry-Fence, raised on every server by the reconcile before it repairs: raise_fences.py): there "
    "the call is refused (seeds 392, 162, 2269 keep every invariant). Every later step of the woken instance is "
    "stopped by the fencing"
)

#: Found by the schedules where the crashed instance wakes up (wake.py): its one call pending at the pause lands —
#: on a proxy or on MariaDB servers only (no hub schedule shows it).
WAKE_KNOWN: tuple[KnownIssue, ...] = (
    KnownIssue("paused_proxy_command_lands_after_takeover", _IN_FLIGHT_WHY, _in_flight, 588, "switchover"),
    KnownIssue("paused_call_lands_after_failover_takeover", _IN_FLIGHT_WHY, _in_flight, 2024, "failover"),
)

#: Of the switchover's none is open: the three this simulation found first (no_return's fence missing ferryd's commits
#: in flight, seed 3631; a multi-source candidate's other connection left stopped, seed 658; a move completed before
#: its point of no return when the old master could not be read, seed 7216) are fixed, and their seeds run in every
#: sweep.
KNOWN: tuple[KnownIssue, ...] = FAILOVER_KNOWN + WAKE_KNOWN


def known(report: Report, violation: Violation) -> KnownIssue | None:
    return next((k for k in KNOWN if k.schedule == report.kind and k.matches(report, violation)), None)
