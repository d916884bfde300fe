"""How many heavy reads (fanned out to every server of a cluster) run at once, per token and in this process: a
read past either bound is refused at once with a 429 naming it, rather than queued behind the others, so a room of
dashboards cannot pile up work the collector and operations then wait behind."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from ferry_control.core.errors import TooManyRequests


class ConcurrencyLimit:
    def __init__(self, per_token_max: int, total_max: int):
        self.per_token_max = per_token_max
        self.total_max = total_max
        self._running: Counter[int] = Counter()

    @property
    def running(self) -> int:
        return sum(self._running.values())

    @contextmanager
    def held(self, token_id: int, what: str) -> Iterator[None]:
        """One `what` of `token_id` while the context lasts; 429 `too_many_concurrent_reads` past a bound."""
        if self._running[token_id] >= self.per_token_max:
            raise TooManyRequests(
                f"this token has {self._running[token_id]} {what} in progress, the most one token may "
                "(heavy_reads_per_token_max); retry when one has answered",
                1.0, code="too_many_concurrent_reads",
                details={"running": self._running[token_id], "limit": self.per_token_max, "per": "token"},
            )  # fmt: skip
        if self.running >= self.total_max:
            raise TooManyRequests(
                f"this API instance has {self.running} heavy reads in progress, the most it runs at once "
                "(heavy_reads_max); retry shortly",
                1.0, code="too_many_concurrent_reads",
                details={"running": self.running, "limit": self.total_max, "per": "instance"},
            )  # fmt: skip
        self._running[token_id] += 1
        try:
            yield
        finally:
            self._running[token_id] -= 1
            if self._running[token_id] <= 0:
                del self._running[token_id]
