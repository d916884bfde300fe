"""The orchestrator's fast tier: seeded schedules of the real switchover — its guard's undo, settle and roll forward,
and the reconciler's repair after an API crash — over generated topologies on an in-memory cluster with faults
(tests/simulation/), each checked against the invariants (tests/simulation/invariants.py). In some schedules the
crashed instance was only paused and wakes up after the reconcile took its cluster over (perhaps while a second
operation holds it): the real fencing must stop it — no server change after the takeover but by the lock's holder,
its record left as the reconcile wrote it (tests/simulation/wake.py). No server, no database: virtual time, an
in-memory lock, a pure function of the seed.

FERRY_SIM_SCHEDULES sets how many seeds the sweep runs (default 2,000); FERRY_SIM_SEED=<seed> runs that one alone
and prints its whole story (with `-s`):

    FERRY_SIM_SEED=<seed> .venv/bin/pytest -q -s -p no:cacheprovider \
        backend/tests/operations/test_orchestrator_simulation.py -k seeded

Violations listed in tests/simulation/known.py are known open bugs: the sweep reports them without failing, and each
one's seed is an expected failure here until it is fixed. An operation ending in an internal error fails the sweep
(tests/simulation/sweep.py). A move rolled forward although its candidate took
no write is by design once the candidate's connection to the old master was cut (no_return.decide, rule 1)."""

from __future__ import annotations

import os

import pytest

from tests.simulation.known import KNOWN, KnownIssue
from tests.simulation.schedule import run, run_many
from tests.simulation.sweep import judge
from tests.simulation.wake import woken

SCHEDULES = int(os.environ.get("FERRY_SIM_SCHEDULES", "2000"))
ONE_SEED = os.environ.get("FERRY_SIM_SEED")
REPLAY = (
    "FERRY_SIM_SEED={seed} .venv/bin/pytest -q -s -p no:cacheprovider "
    "backend/tests/operations/test_orchestrator_simulation.py -k seeded"
)


@pytest.mark.long  # a few hundred seeded schedules: half a minute on a busy machine
def test_seeded_schedules_keep_the_invariants() -> None:
    seeds = [int(ONE_SEED)] if ONE_SEED else range(SCHEDULES)
    batch = run_many(seeds)
    verdict = judge(batch.reports, batch.failed)
    print(
        f"\n{len(batch.reports)} schedules in {batch.seconds:.1f} s ({len(batch.reports) / batch.seconds:.0f}/s); "
        f"outcomes: {batch.outcomes()}"
    )
    print(woken(batch.reports))
    print("\n".join(verdict.lines()))
    if ONE_SEED:
        print(batch.reports[0].summary())
    failure = verdict.failure(REPLAY)
    assert failure is None, failure
    if not ONE_SEED:  # some crashes were pauses, and every woken instance was stopped (or had nothing left to do)
        assert any(r.woke for r in batch.reports)


def test_a_seed_replays_the_same_schedule() -> None:
    first = [run(seed).summary() for seed in range(40)]
    again = [run(seed).summary() for seed in range(40)]
    assert first == again


SWITCHOVER_KNOWN = [k for k in KNOWN if k.schedule == "switchover"]


@pytest.mark.xfail(strict=True, reason="a known open bug (tests/simulation/known.py): fixed, this passes — remove it")
@pytest.mark.parametrize("issue", SWITCHOVER_KNOWN, ids=[k.name for k in SWITCHOVER_KNOWN])
def test_known_issue_still_shows(issue: KnownIssue) -> None:
    report = run(issue.seed)
    assert not any(issue.matches(report, v) for v in report.violations), (
        f"{issue.name}: {issue.why}\n{report.summary()}"
    )


#: Seeds that once showed a bug, now fixed: each keeps every invariant (they are in the sweep's range too; here they
#: run whatever FERRY_SIM_SCHEDULES says). 3631: the fence missed ferryd's commits in flight (a write lost); 658: a
#: multi-source candidate's other connection left stopped; 7216: completed before the point of no return when the old
#: master could not be read; 48 and 347: the two disagreements of the live undo and the reconcile (the proxy's
#: writer, the point of no return) that one rule (no_return.decide) ended; 392: a woken instance's call pending at its
#: pause landed after the takeover (refused now: ferryd keeps the fencing token the reconcile raised).
FIXED_SEEDS = (3631, 658, 7216, 48, 347, 392)


@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_a_seed_that_once_broke_an_invariant_keeps_them(seed: int) -> None:
    report = run(seed)
    assert not report.violations, f"replayed by `{REPLAY.format(seed=seed)}`:\n{report.summary()}"
