"""A connection's lag in one domain as judged against its configured delay (computed by services/lag.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

LagLevel = Literal["none", "low", "high"]


class LagVerdict(BaseModel):
    """One connection's lag in one domain, judged against its configured delay."""

    seconds: float = Field(description="Seconds behind (see DomainLagRead.seconds), delay included.")
    transactions: int = Field(description="Transactions behind the master's binlog position.")
    delay_s: int = Field(0, description="The connection's configured delay (MASTER_DELAY); 0 without one.")
    beyond_delay_s: float = Field(
        description="What the seconds exceed the configured delay by (never below 0): the lag that is not by design."
    )
    level: LagLevel = Field(
        description="none: caught up (beyond the delay: 0 s and, without a delay, 0 transactions); high: 10 s or "
        "more beyond the delay, or (without a delay) 1,000 transactions or more; low otherwise."
    )
    words: str = Field(
        description="The figure in words, as every page and ferryctl print it: `4.2 s · 12 txn`, or with a "
        "configured delay `30 s (delay 30 s, +0 s) · 445 txn`."
    )
