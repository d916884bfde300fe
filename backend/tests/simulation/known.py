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
#: did not answer (1581, outside the default range); their seeds run in test_orchestrator_failover_simulation.py.
FAILOVER_KNOWN: tuple[KnownIssue, ...] = ()

#: Of the switchover's none is open: the three this simulation found first (no_return's fence missing ferryd's commits
#: in flight, seed 3631; a multi-source candidate's other connection left stopped, seed 658; a move completed before
#: its point of no return when the old master could not be read, seed 7216) are fixed, and their seeds run in every
#: sweep.
KNOWN: tuple[KnownIssue, ...] = FAILOVER_KNOWN


def known(report: Report, violation: Violation) -> KnownIssue | None:
    return next((k for k in KNOWN if k.schedule == report.kind and k.matches(report, violation)), None)
