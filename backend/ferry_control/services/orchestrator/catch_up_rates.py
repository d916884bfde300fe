"""The arithmetic of catching up before a switchover's window: per domain, the master's commit rate and the
candidate's apply rate measured from consecutive positions, how far the candidate is behind, and the window a
switchover started now would need (transactions behind ÷ apply rate: once the master stops, the candidate has that
much left to apply). Pure: samples in, a prediction and its words out; the waiting is `prepare.py`'s.

Whether a candidate keeps up is `apply_rates.judge`'s verdict, the one the parallel-apply page and the API give.
Rates are taken over the samples of the last `RATE_SPAN_S` (at least `RATE_SPAN_MIN_S` of them): long enough that a
group commit of a few hundred transactions does not read as a burst, short enough that a load that changes is seen
within a couple of seconds."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from ferry_control.services.apply_rates import judge

#: The span rates are measured over, and the least span before any rate is trusted.
RATE_SPAN_S = 2.0
RATE_SPAN_MIN_S = 0.3
#: Samples kept (a bound: at 10 a second this is several spans).
SAMPLES_MAX = 200


@dataclass(frozen=True)
class Sample:
    """One look at both servers: seconds on a monotonic clock, and each one's seq_no per domain (the master's binlog,
    the candidate's current position)."""

    at_s: float
    master: Mapping[int, int]
    candidate: Mapping[int, int]


@dataclass(frozen=True)
class DomainRates:
    """One domain of the master, as measured."""

    domain: int
    #: Transactions the candidate lacks there now.
    behind: int
    #: Transactions a second: the master's commits and the candidate's applies over the span.
    commit_rate: float
    apply_rate: float
    #: Seconds the candidate needs to apply what it lacks once the master stops (inf: it applies nothing while it
    #: lacks something).
    catch_up_s: float

    @property
    def keeps_up(self) -> bool:
        """Not falling behind as `apply_rates.judge` defines it for every surface (a candidate that lacks nothing
        keeps up; two servers' positions are never read at one instant, so within its tolerance too)."""
        verdict, _, _ = judge(self.commit_rate, self.apply_rate, self.behind)
        return verdict != "falls_behind"


@dataclass(frozen=True)
class Prediction:
    """What a switchover started now would hold writes for, at least (the catch-up; the window's fixed steps come on
    top), and the rates it was predicted from."""

    #: Seconds the measurement spans (0 until two samples are apart).
    span_s: float
    domains: tuple[DomainRates, ...]

    @property
    def catch_up_s(self) -> float:
        return max((d.catch_up_s for d in self.domains), default=0.0)

    @property
    def behind(self) -> int:
        return sum(d.behind for d in self.domains)

    @property
    def measured(self) -> bool:
        return self.span_s >= RATE_SPAN_MIN_S

    def worst(self) -> DomainRates | None:
        return max(self.domains, key=lambda d: (d.catch_up_s, d.behind), default=None)

    def as_dict(self) -> dict[str, object]:
        return {
            "span_s": round(self.span_s, 3),
            "behind": self.behind,
            "predicted_catch_up_s": None if math.isinf(self.catch_up_s) else round(self.catch_up_s, 3),
            "domains": [
                {
                    "domain": d.domain,
                    "behind": d.behind,
                    "master_commits_per_s": round(d.commit_rate, 1),
                    "candidate_applies_per_s": round(d.apply_rate, 1),
                    "catch_up_s": None if math.isinf(d.catch_up_s) else round(d.catch_up_s, 3),
                    "keeps_up": d.keeps_up,
                }
                for d in self.domains
            ],
        }


class RateTracker:
    """Consecutive samples of a master and a candidate, and the prediction they make."""

    def __init__(self) -> None:
        self.samples: deque[Sample] = deque(maxlen=SAMPLES_MAX)

    def add(self, sample: Sample) -> Prediction:
        self.samples.append(sample)
        return self.predict()

    def predict(self) -> Prediction:
        if not self.samples:
            return Prediction(0.0, ())
        last = self.samples[-1]
        first = next((s for s in self.samples if last.at_s - s.at_s <= RATE_SPAN_S), last)
        if first is last and len(self.samples) > 1:
            first = self.samples[-2]
        span_s = last.at_s - first.at_s
        domains = []
        for domain, seq in sorted(last.master.items()):
            behind = max(0, seq - last.candidate.get(domain, 0))
            if span_s > 0:
                commit_rate = max(0, seq - first.master.get(domain, seq)) / span_s
                apply_rate = max(0, last.candidate.get(domain, 0) - first.candidate.get(domain, 0)) / span_s
            else:
                commit_rate = apply_rate = 0.0
            if behind == 0:
                catch_up_s = 0.0
            elif apply_rate > 0:
                catch_up_s = behind / apply_rate
            else:
                catch_up_s = math.inf
            domains.append(DomainRates(domain, behind, commit_rate, apply_rate, catch_up_s))
        return Prediction(span_s, tuple(domains))

    def gaining(self) -> bool | None:
        """Whether the candidate is catching up: lacks fewer transactions now than a whole span ago (None: too soon
        to say — judged only over a full `RATE_SPAN_S`, so a candidate whose applier is still starting again, as
        MariaDB's is after its parallel apply was raised, is not taken for one that stopped gaining)."""
        if len(self.samples) < 2:
            return None
        last = self.samples[-1]
        first = next((s for s in self.samples if last.at_s - s.at_s <= RATE_SPAN_S), last)
        if self.samples[0].at_s > last.at_s - RATE_SPAN_S * 0.95:
            return None
        return _behind(last) < _behind(first)


def _behind(sample: Sample) -> int:
    return sum(max(0, seq - sample.candidate.get(d, 0)) for d, seq in sample.master.items())


def explain(
    candidate: str,
    master: str,
    prediction: Prediction,
    max_window_s: float,
    *,
    waited_s: float | None = None,
    delay_s: int = 0,
) -> str:
    """Why a switchover now would hold writes longer than `max_window_s`, in numbers, with what to do about it."""
    worst = prediction.worst()
    if worst is None:
        return f"{candidate}: no domain of {master} to compare"
    window = "indefinitely" if math.isinf(prediction.catch_up_s) else f"for ~{prediction.catch_up_s:.1f} s"
    head = (
        f"{candidate} applies {worst.apply_rate:,.0f} txn/s, {master} commits {worst.commit_rate:,.0f} txn/s in "
        f"domain {worst.domain}, and {candidate} is {worst.behind:,} transactions behind there"
    )
    if not worst.keeps_up:
        head += ": it falls further behind while this load lasts"
    waited = f" after waiting {waited_s:.1f} s for it to catch up" if waited_s is not None else ""
    if delay_s:
        return (
            f"{head}; it is a delayed replica (it applies each transaction {delay_s} s after its commit), so a "
            f"switchover now would hold writes {window}{waited}, over the {max_window_s:g} s budget — remove its "
            "delay first, or choose another candidate"
        )
    if math.isinf(prediction.catch_up_s):
        accept = "start its replication (it applied nothing meanwhile)"
    else:
        accept = f"accept with --max-window {math.ceil(prediction.catch_up_s)}"
    return (
        f"{head}; a switchover now would hold writes {window}{waited}, over the {max_window_s:g} s budget — "
        f"{accept}, or raise parallel apply on {candidate} (catch_up_parallel_workers, or its parallel-apply setting)"
    )
