"""The catch-up phase of a master move, before its window: while the master still takes writes, the candidate is
brought close enough that the window — read-only on, the candidate applies what it lacks, promoted — fits the move's
budget (`max_window_s`). Both servers are sampled every `SAMPLE_INTERVAL_S`; the move goes on as soon as

- the candidate lacks nothing, or its predicted catch-up is negligible (`NEGLIGIBLE_S`), or
- the prediction fits the budget and the candidate has stopped gaining (waiting longer would not shorten the
  window),

and when `prepare_timeout_s` has passed it goes on if the prediction fits, else it fails having changed nothing, with
both rates and the predicted window in words (`catch_up_rates.explain`). Progress is the step's detail, published
about twice a second."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ferry_control.core.gtid import seq_by_domain
from ferry_control.drivers.base import ServerDriver
from ferry_control.services.orchestrator.catch_up_rates import Prediction, RateTracker, Sample, explain
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ServerView

#: Between two looks at both servers.
SAMPLE_INTERVAL_S = 0.1
#: A predicted catch-up this short is below what the window's fixed steps take anyway: go.
NEGLIGIBLE_S = 0.02
#: Between two publications of the step's progress.
PROGRESS_EVERY_S = 0.5
#: How long a dry run samples both servers for its forecast.
FORECAST_S = 0.5


def budget(ctx: OperationContext[Any, Any], params_max_window_s: float | None, params_timeout_s: float | None,
           cluster_max_window_s: float | None) -> tuple[float, float]:  # fmt: skip
    """The move's window budget and catch-up bound: the operation's own, else the cluster's, else the settings'."""
    settings = ctx.settings
    max_window_s = params_max_window_s or cluster_max_window_s or settings.operations.switchover_max_window_s
    timeout_s = params_timeout_s or settings.operations.switchover_prepare_timeout_s
    return max_window_s, timeout_s


async def catch_up_before_window(
    ctx: OperationContext[Any, Any],
    master: ServerView,
    candidate: ServerView,
    *,
    max_window_s: float,
    timeout_s: float,
    delay_s: int = 0,
) -> Prediction:
    """The `catch_up_before_window` step: waits (bounded by `timeout_s`) until a window started now would fit
    `max_window_s`; returns the prediction it went on with. OperationFailed (nothing changed) when it never fit."""
    master_driver, candidate_driver = master.require_driver(), candidate.require_driver()
    tracker = RateTracker()
    started = time.monotonic()
    published = started
    async with ctx.step("catch_up_before_window") as step:
        while True:
            now, prediction = await _look(tracker, master_driver, candidate_driver)
            waited_s = now - started
            step.detail = {
                **prediction.as_dict(),
                "waited_s": round(waited_s, 3),
                "max_window_s": max_window_s,
                "prepare_timeout_s": timeout_s,
            }
            go = _go(prediction, tracker.gaining(), max_window_s)
            if go is None and waited_s >= timeout_s:
                if prediction.measured and prediction.catch_up_s <= max_window_s:
                    go = f"the {timeout_s:g} s catch-up bound passed; the predicted window fits"
                else:
                    raise refused(
                        "nothing was changed: "
                        + explain(
                            candidate.info.label,
                            master.info.label,
                            prediction,
                            max_window_s,
                            waited_s=waited_s,
                            delay_s=delay_s,
                        )  # fmt: skip
                    )
            if go is not None:
                step.detail["went_on"] = go
                return prediction
            if now - published >= PROGRESS_EVERY_S:
                ctx.steps[-1].detail = dict(step.detail)
                ctx.changed()
                published = now
            await asyncio.sleep(SAMPLE_INTERVAL_S)


async def forecast(master: ServerView, candidate: ServerView, seconds: float = FORECAST_S) -> Prediction:
    """The rates and predicted window over `seconds` of sampling, changing nothing (a dry run's forecast); at once when
    the first look finds the candidate lacking nothing."""
    master_driver, candidate_driver = master.require_driver(), candidate.require_driver()
    tracker = RateTracker()
    started = time.monotonic()
    while True:
        now, prediction = await _look(tracker, master_driver, candidate_driver)
        if prediction.behind == 0 and len(tracker.samples) == 1 or now - started >= seconds:
            return prediction
        await asyncio.sleep(SAMPLE_INTERVAL_S)


def advice(
    candidate: str, master: str, prediction: Prediction, max_window_s: float, delay_s: int = 0, *, hub: bool = False
) -> list[str]:
    """What a dry run recommends from its forecast: parallel apply for a candidate that cannot keep up, and what a
    switchover now would do about a window over budget. A candidate delayed by `delay_s` (its configured delay) is
    neither stalled nor slow for applying nothing or less than the master commits over the forecast: it applies what
    the master wrote that long ago (`delayed_candidate.advice` says what that costs). With `hub`, `master` is an
    intermediate master whose role moves: its move holds no writes (no budget to say), and it waits for the
    candidate to reach the hub's position before it takes the hub's connections."""
    said = []
    for d in prediction.domains if not delay_s else ():
        if prediction.measured and d.behind and d.apply_rate == 0:
            would = (
                f"a move of {master}'s role now would wait for it to reach {master}'s position and, at its bound, be "
                "undone"
                if hub
                else "a switchover now would wait for it and, at its prepare timeout, refuse"
            )
            said.append(
                f"{candidate} is stalled in domain {d.domain}: it applied nothing in {prediction.span_s:.1f} s while "
                f"{d.behind:,} transaction(s) wait (a lock, a stopped connection, or a delay): {would} — find what "
                "holds it, or choose another candidate"
            )
        elif prediction.measured and not d.keeps_up:
            said.append(
                f"{candidate} applies {d.apply_rate:,.0f} txn/s while {master} commits {d.commit_rate:,.0f} txn/s in "
                f"domain {d.domain}: it falls behind while this load lasts — raise its parallel apply (ferryctl "
                "parallel-apply, or the cluster's catch_up_parallel_workers for switchovers and drills)"
            )
    if prediction.measured and prediction.catch_up_s > max_window_s and not hub:
        said.append(
            "a switchover now would first wait (up to its prepare timeout) for the predicted window to fit the "
            f"{max_window_s:g} s budget: " + explain(candidate, master, prediction, max_window_s, delay_s=delay_s)
        )
    return said


async def _look(tracker: RateTracker, master: ServerDriver, candidate: ServerDriver) -> tuple[float, Prediction]:
    """Both servers read together (the master's binlog, the candidate's current position), added to `tracker`."""
    m, c = await asyncio.gather(master.positions(), candidate.positions())
    now = time.monotonic()
    return now, tracker.add(Sample(now, seq_by_domain(m.binlog), seq_by_domain(c.current or c.slave)))


def _go(prediction: Prediction, gaining: bool | None, max_window_s: float) -> str | None:
    """Why the move can go on now, or None to keep waiting."""
    if prediction.behind == 0:
        return "the candidate lacks nothing"
    if not prediction.measured:
        return None
    if prediction.catch_up_s <= NEGLIGIBLE_S:
        return f"predicted catch-up {prediction.catch_up_s * 1000:.0f} ms: negligible"
    if prediction.catch_up_s <= max_window_s and gaining is False:
        return (
            f"predicted catch-up {prediction.catch_up_s:.3f} s fits the {max_window_s:g} s budget and the candidate is "
            "no longer gaining"
        )
    return None
