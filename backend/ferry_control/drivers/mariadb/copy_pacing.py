"""A rebuild's copy, paced and measured: `Pacer` holds the copy to its `CopyThrottle` (a rate in MB/s, or paused),
followed as the operation changes it; `Meter` counts the bytes and gives the rate over the last few seconds."""

from __future__ import annotations

import asyncio
import time
from collections import deque

from ferry_control.drivers.base import CopyThrottle

#: How often a paused copy looks whether it may go on.
PAUSE_POLL_S = 0.1
#: The window the rate is measured over.
RATE_WINDOW_S = 5.0


class Pacer:
    """Waits before each chunk as long as the throttle's rate asks (from where the copy stands: a raised or lifted
    limit takes effect at the next chunk), and while it is paused."""

    def __init__(self, throttle: CopyThrottle):
        self.throttle = throttle
        self._next = time.monotonic()

    async def before(self, size: int) -> None:
        while self.throttle.paused:
            await asyncio.sleep(PAUSE_POLL_S)
            self._next = time.monotonic()
        rate = self.throttle.mb_s
        now = time.monotonic()
        if rate is None or rate <= 0:
            self._next = now
            return
        self._next = max(self._next, now - 1.0) + size / (rate * 1_000_000)
        while (now := time.monotonic()) < self._next and not self.throttle.paused:
            await asyncio.sleep(min(self._next - now, PAUSE_POLL_S))

    def chunk(self) -> int:
        """How much to read at once: about a tenth of a second's worth at the rate (4 KiB to 256 KiB)."""
        rate = self.throttle.mb_s
        if rate is None or rate <= 0:
            return 256 * 1024
        return max(4096, min(256 * 1024, int(rate * 100_000)))


class Meter:
    def __init__(self) -> None:
        self.bytes = 0
        self._samples: deque[tuple[float, int]] = deque([(time.monotonic(), 0)])

    def add(self, size: int) -> None:
        self.bytes += size

    def rate(self) -> float:
        """Bytes per second over the last `RATE_WINDOW_S`."""
        now = time.monotonic()
        self._samples.append((now, self.bytes))
        while len(self._samples) > 2 and now - self._samples[1][0] >= RATE_WINDOW_S:
            self._samples.popleft()
        t0, b0 = self._samples[0]
        return (self.bytes - b0) / (now - t0) if now > t0 else 0.0
