"""One long-running background task of the app (the collector's loop, the drill scheduler's), started at most
once and cancelled cleanly on stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class BackgroundTask:
    """Runs `loop()` as a named asyncio task; `stop()` cancels it and waits for it to end."""

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
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
