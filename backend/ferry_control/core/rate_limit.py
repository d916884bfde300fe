"""Token buckets of `per_min` calls per key, refilled evenly over a minute, kept in this process (with several API
instances each limits on its own, so a key gets at most instances x per_min): the expensive reads per API token
(those fanned out to every server of a cluster), and failed authentications per client address. A dictionary and a
lock: nothing to depend on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

#: Buckets kept at most; full buckets are forgotten first when there are more (a full bucket is the default).
BUCKETS_MAX = 10_000


class RateLimiter:
    def __init__(self, per_min: int, clock: Callable[[], float] = time.monotonic):
        self.capacity = float(per_min)
        self.refill_per_s = per_min / 60.0
        self._clock = clock
        self._buckets: dict[Hashable, tuple[float, float]] = {}  # key → (tokens, at)
        self._lock = threading.Lock()

    def wait_s(self, key: Hashable) -> float:
        """Without taking a call: 0.0 when `key` has one left, else the seconds until it has."""
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.refill_per_s)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.refill_per_s

    def take(self, key: Hashable) -> float:
        """Takes one call for `key`: 0.0 when allowed, else the seconds until one is allowed."""
        with self._lock:
            now = self._clock()
            tokens, at = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.refill_per_s)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return (1.0 - tokens) / self.refill_per_s
            self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > BUCKETS_MAX:
                self._forget_full(now)
            return 0.0

    def _forget_full(self, now: float) -> None:
        for key, (tokens, at) in list(self._buckets.items()):
            if tokens + (now - at) * self.refill_per_s >= self.capacity:
                del self._buckets[key]
