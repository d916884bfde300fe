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


def _settle_missed_in_flight(report: Report, v: Violation) -> bool:
    return v.kind in ("lost_write", "errant") and v.in_flight


def _other_source_left_stopped(report: Report, v: Violation) -> bool:
    return v.kind == "other_source" and "candidate_keeps_connections" in " ".join(report.steps)


def _completed_with_old_master_unread(report: Report, v: Violation) -> bool:
    outcome = report.outcome
    return (
        v.kind in ("point_of_no_return", "split_brain")
        and outcome is not None
        and not outcome.candidate_writable_at_stop
        and "cannot be read" in outcome.detail
    )


KNOWN: tuple[KnownIssue, ...] = (
    KnownIssue(
        "judge_misses_commits_in_flight",
        "no_return.judge fences the candidate with read-only on and reads its binlog at once, without waiting for "
        "the client commits admitted before read-only went on (ferryd lands them after): a write the candidate "
        "acknowledged just after is missed, the move is undone, and that write is lost (and errant on the candidate)",
        _settle_missed_in_flight,
        3631,
    ),
    KnownIssue(
        "multi_source_candidate_other_connection_left_stopped",
        "candidate_keeps_connections stops and starts a multi-source candidate's other connections; a stop there "
        "(a lost answer, an API crash) leaves one stopped: neither the undo (put_back_servers) nor the reconcile's "
        "completion (complete_move) starts it again, so the candidate no longer receives the other master's domains",
        _other_source_left_stopped,
        658,
    ),
    KnownIssue(
        "completed_before_point_of_no_return",
        "no_return.judge calls a move 'completed' whenever the old master cannot be read at that moment, even when "
        "the candidate was never made writable (a stop before the point of no return, which is undone): the live "
        "'settle' (read-only off lost on its way) and the reconcile after a crash then roll it forward — and a "
        "reconcile after a crash that came before the old master was made read-only makes the candidate writable "
        "beside it: two writable masters (complete_move's read-only on the old master fails as its read did)",
        _completed_with_old_master_unread,
        7216,
    ),
)


def known(report: Report, violation: Violation) -> KnownIssue | None:
    return next((k for k in KNOWN if k.matches(report, violation)), None)
