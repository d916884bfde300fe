"""The catch-up arithmetic before a switchover's window, as pure logic: rates from consecutive positions, the window a
switchover started now would need, whether the candidate is gaining, the decision to go on, and the refusal's
words (both rates, the predicted window, what to do)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ferry_control.services.orchestrator.catch_up_rates import (
    RATE_SPAN_S,
    RateTracker,
    Sample,
    explain,
)
from ferry_control.services.orchestrator.prepare import NEGLIGIBLE_S, _go, advice


def feed(tracker: RateTracker, steps: int, dt: float, commit: float, apply: float, start_behind: int = 0) -> None:
    """`steps` samples `dt` apart: the master commits `commit` txn/s in domain 1, the candidate applies `apply`."""
    for i in range(steps + 1):
        t = i * dt
        master = start_behind + int(commit * t)
        candidate = min(master, int(apply * t))
        tracker.add(Sample(t, {1: master}, {1: candidate}))


def test_rates_and_the_predicted_window_come_from_consecutive_positions() -> None:
    tracker = RateTracker()
    feed(tracker, steps=20, dt=0.1, commit=2300, apply=1480, start_behind=500)
    p = tracker.predict()
    (d,) = p.domains
    assert abs(d.commit_rate - 2300) < 30 and abs(d.apply_rate - 1480) < 30, d
    assert d.behind == 500 + 2300 * 2 - 1480 * 2
    assert not d.keeps_up
    assert math.isclose(p.catch_up_s, d.behind / d.apply_rate)
    assert tracker.gaining() is False


def test_a_candidate_that_lacks_nothing_goes_at_once_and_one_that_applies_nothing_never_fits() -> None:
    level = RateTracker()
    level.add(Sample(0.0, {1: 10, 2: 5}, {1: 10, 2: 5, 3: 99}))  # a domain the master lacks is not its business
    assert level.predict().behind == 0
    assert _go(level.predict(), level.gaining(), 10.0) == "the candidate lacks nothing"

    stalled = RateTracker()
    feed(stalled, steps=10, dt=0.1, commit=100, apply=0, start_behind=50)
    assert math.isinf(stalled.predict().catch_up_s)
    assert _go(stalled.predict(), stalled.gaining(), 3600.0) is None


def test_it_waits_while_the_candidate_gains_and_goes_once_it_no_longer_does() -> None:
    gaining = RateTracker()
    feed(gaining, steps=25, dt=0.1, commit=1000, apply=3000, start_behind=8000)
    assert gaining.gaining() is True
    assert _go(gaining.predict(), gaining.gaining(), 10.0) is None  # waiting shortens the window: wait

    steady = RateTracker()
    feed(steady, steps=25, dt=0.1, commit=1000, apply=1000, start_behind=800)
    prediction = steady.predict()
    assert steady.gaining() is False and prediction.catch_up_s <= 10.0
    assert "no longer gaining" in (_go(prediction, False, 10.0) or "")
    assert _go(prediction, False, prediction.catch_up_s / 2) is None  # over the budget: keep waiting


def test_gaining_is_judged_only_over_a_whole_span() -> None:
    """An applier that started again a second ago (MariaDB's, after its parallel apply was raised) has fallen
    behind meanwhile: too soon to say it stopped gaining, so the move keeps waiting even though the window fits."""
    restarting = RateTracker()
    feed(restarting, steps=10, dt=0.1, commit=1000, apply=500, start_behind=100)
    prediction = restarting.predict()
    assert prediction.measured and prediction.catch_up_s <= 10.0
    assert restarting.gaining() is None
    assert _go(prediction, restarting.gaining(), 10.0) is None


def test_a_negligible_catch_up_goes_even_while_gaining() -> None:
    tracker = RateTracker()
    tracker.add(Sample(0.0, {1: 1000}, {1: 0}))
    tracker.add(Sample(0.5, {1: 1050}, {1: 1047}))
    prediction = tracker.predict()
    assert 0 < prediction.catch_up_s <= NEGLIGIBLE_S
    assert "negligible" in (_go(prediction, True, 10.0) or "")


def test_too_soon_to_measure_never_goes_unless_level() -> None:
    tracker = RateTracker()
    tracker.add(Sample(0.0, {1: 100}, {1: 90}))
    assert not tracker.predict().measured and tracker.gaining() is None
    assert _go(tracker.predict(), None, 10.0) is None


def test_the_refusal_says_both_rates_the_window_and_what_to_do() -> None:
    tracker = RateTracker()
    feed(tracker, steps=20, dt=0.1, commit=2310, apply=1480, start_behind=4000)
    words = explain("s2", "s1", tracker.predict(), 1.0, waited_s=60.0)
    assert "s2 applies 1,4" in words and "s1 commits 2,3" in words and "in domain 1" in words
    assert "falls further behind while this load lasts" in words
    assert "would hold writes for ~" in words and "after waiting 60.0 s" in words
    assert "--max-window" in words and "parallel apply on s2" in words


@given(st.lists(st.tuples(st.floats(0.01, 1.0), st.integers(0, 500), st.integers(0, 500)), min_size=1, max_size=60))
def test_predictions_are_never_negative_and_only_use_the_last_span(steps: list[tuple[float, int, int]]) -> None:
    tracker = RateTracker()
    t, master, candidate = 0.0, 0, 0
    for dt, commits, applies in steps:
        t += dt
        master += commits
        candidate = min(master, candidate + applies)
        p = tracker.add(Sample(t, {1: master}, {1: candidate}))
        (d,) = p.domains
        assert d.behind == master - candidate >= 0
        assert d.commit_rate >= 0 and d.apply_rate >= 0 and d.catch_up_s >= 0
        assert p.span_s <= max(RATE_SPAN_S, dt) + 1e-9


def test_the_dry_runs_advice_flags_a_stalled_candidate_and_one_that_falls_behind() -> None:
    stalled = RateTracker()
    stalled.add(Sample(0.0, {1: 100, 2: 50}, {1: 90, 2: 50}))
    stalled.add(Sample(0.5, {1: 150, 2: 80}, {1: 90, 2: 80}))  # domain 1 applies nothing, domain 2 keeps up
    words = advice("s2", "s1", stalled.predict(), 10.0)
    assert any("s2 is stalled in domain 1" in w and "60 transaction(s) wait" in w for w in words), words
    assert not any("domain 2" in w for w in words), words

    slow = RateTracker()
    feed(slow, steps=10, dt=0.1, commit=2000, apply=1000, start_behind=100)
    words = advice("s2", "s1", slow.predict(), 10.0)
    assert any("falls behind while this load lasts" in w and "parallel" in w for w in words), words
    assert advice("s2", "s1", RateTracker().add(Sample(0.0, {1: 5}, {1: 5})), 10.0) == []


def test_a_hub_moves_advice_flags_a_stalled_candidate_in_the_hub_moves_words_and_no_budget() -> None:
    """An intermediate master's move holds no writes: its dry run flags a stalled candidate with what the hub move
    would do (wait for it to reach the hub's position, be undone at its bound) and says nothing of a budget."""
    stalled = RateTracker()
    stalled.add(Sample(0.0, {1: 100}, {1: 40}))
    stalled.add(Sample(0.5, {1: 150}, {1: 40}))
    (words,) = advice("s5", "s3", stalled.predict(), 0.1, hub=True)
    assert words.startswith("s5 is stalled in domain 1: it applied nothing in 0.5 s while 110 transaction(s)"), words
    assert "a move of s3's role now would wait for it to reach s3's position and, at its bound, be undone" in words
    assert "budget" not in words and "prepare timeout" not in words, words


def test_a_delayed_candidate_is_neither_stalled_nor_slow_in_the_advice_and_its_window_says_why() -> None:
    waiting = RateTracker()
    waiting.add(Sample(0.0, {1: 100}, {1: 40}))
    waiting.add(Sample(0.5, {1: 150}, {1: 40}))  # applies nothing for now: what it applies was written 30 s ago
    words = advice("s2", "s1", waiting.predict(), 10.0, delay_s=30)
    assert not any("stalled" in w or "parallel apply" in w for w in words), words
    (window,) = words
    assert "a switchover now would first wait" in window and "it is a delayed replica" in window, words
    assert "remove its delay first, or choose another candidate" in window, words
