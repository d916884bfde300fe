"""Lag, judged once: a replica connection's lag in one domain against the delay configured on that connection (pure
functions). Every surface that shows lag — the overview, the topology's edges, the positions matrix, the lag history's
delay band and `ferryctl` — takes the figure and its words from here, so one connection reads the same everywhere:
`30 s (delay 30 s, +0 s) · 445 txn` for a replica delayed on purpose and at its delay, `4.2 s · 12 txn` otherwise."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from ferry_control.schemas.lag import LagLevel, LagVerdict
from ferry_control.schemas.topology import DomainLagRead

#: Lag beyond the configured delay from which it is "high" (seconds, transactions).
HIGH_SECONDS = 10.0
HIGH_TRANSACTIONS = 1000

V = TypeVar("V", bound=LagVerdict)


def seconds_words(seconds: float) -> str:
    """`0 s`, `850 ms`, `4.2 s`, `29 s`, `3 min 05 s`, `2 h 03 min`."""
    s = max(0.0, seconds)
    if s == 0:
        return "0 s"
    if s < 1:
        return f"{round(s * 1000)} ms"
    if s < 10:
        return f"{s:.1f} s"
    if s < 60:
        return f"{round(s)} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def transactions_words(transactions: int) -> str:
    return f"{max(0, transactions):,} txn"


def judge(seconds: float, transactions: int, delay_s: int = 0) -> LagVerdict:
    """The verdict of a lag of `seconds` and `transactions` on a connection delayed by `delay_s`. A delayed replica is
    behind by design in transactions, so only the seconds beyond its delay make its level."""
    seconds = max(0.0, float(seconds))
    transactions = max(0, int(transactions))
    delay_s = max(0, int(delay_s))
    beyond = max(0.0, seconds - delay_s)
    if delay_s:
        level: LagLevel = "high" if beyond >= HIGH_SECONDS else "low" if beyond > 0 else "none"
        figure = f"{seconds_words(seconds)} (delay {seconds_words(delay_s)}, +{seconds_words(beyond)})"
    else:
        level = (
            "high"
            if beyond >= HIGH_SECONDS or transactions >= HIGH_TRANSACTIONS
            else "low"
            if beyond > 0 or transactions > 0
            else "none"
        )
        figure = seconds_words(seconds)
    return LagVerdict(
        seconds=seconds, transactions=transactions, delay_s=delay_s, beyond_delay_s=round(beyond, 3), level=level,
        words=f"{figure} · {transactions_words(transactions)}",
    )  # fmt: skip


def judge_stored(lag: Mapping[str, Any], settings: Mapping[str, Any] | None) -> LagVerdict:
    """The verdict of a lag as the collector stored it (`transactions`, `seconds`) on a link with these settings."""
    return judge(float(lag["seconds"]), int(lag["transactions"]), int((settings or {}).get("delay_s") or 0))


def domain_lag(lag: Mapping[str, Any], settings: Mapping[str, Any] | None) -> DomainLagRead:
    """A link's stored lag in one domain as the API reads it: the verdict with the server's own figure."""
    return DomainLagRead(**judge_stored(lag, settings).model_dump(), reported_seconds=lag.get("reported_seconds"))


def worst(verdicts: Iterable[V]) -> V | None:
    """The worst of several: the most seconds beyond the delay, then (equal) the connection without a delay whose
    transactions are most, then the most seconds. None for none."""
    return max(
        verdicts,
        key=lambda v: (v.beyond_delay_s, 0 if v.delay_s else v.transactions, v.seconds, v.transactions),
        default=None,
    )
