"""One long-running background task of the app (the collector's loop, the drill scheduler's), started at most
once and cancelled cleanly on stop — even when something under it swallowed the cancellation."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

#: How long `stop()` waits for the task to end after a cancellation before it cancels again.
RECANCEL_AFTER_S = 1.0


class BackgroundTask:
    """Runs `loop()` as a named asyncio task; `stop()` cancels it and waits for it to end.

    A loop's CancelledError can be lost under it — a library that catches it, or a wait that ends at the moment it
    is cancelled and returns its result instead (`asyncio.wait_for` before Python 3.12) — and the loop then goes on
    as if nothing had been asked: one cancel and an unbounded wait would hang the process's shutdown for good. So
    `stop()` cancels again each `RECANCEL_AFTER_S` until the task has ended, and says loudly that it had to. A loop
    that had failed before it was stopped raises its error from `stop()`."""

    def __init__(self, loop: Callable[[], Coroutine[Any, Any, None]], name: str):
        self._loop = loop
        self._name = name
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if not self.running:
            self._task = asyncio.create_task(self._loop(), name=self._name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        cancels = 0
        while not task.done():
            task.cancel()
            cancels += 1
            if cancels == 2:
                log.warning("%s went on after it was cancelled (a cancellation lost under it): cancelling again",
                            self._name)  # fmt: skip
            await asyncio.wait({task}, timeout=RECANCEL_AFTER_S)
        if not task.cancelled():
            task.result()  # a loop that had failed before it was stopped: its error, as awaiting it would raise
