"""Something to do when the process is asked to stop (SIGTERM or SIGINT), before the handler the server installed:
the stream hub ends every event stream then, so the server can close its connections."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any


def on_stop_signals(loop: asyncio.AbstractEventLoop, stopping: Callable[[], None]) -> Callable[[], None]:
    """Calls `stopping` in the loop when SIGTERM or SIGINT arrives, before the handler the server installed (which
    still runs); returns what puts that handler back. Nothing is installed where no handler of the server's is (the
    default action stays) or off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    installed: dict[int, Any] = {}
    for number in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(number)
        if not callable(previous) or previous is signal.default_int_handler:
            continue

        def handler(signum: int, frame: FrameType | None, previous: Callable[..., Any] = previous) -> None:
            loop.call_soon_threadsafe(stopping)
            previous(signum, frame)

        signal.signal(number, handler)
        installed[number] = (previous, handler)

    def restore() -> None:
        for number, (previous, handler) in installed.items():
            if signal.getsignal(number) is handler:
                signal.signal(number, previous)

    return restore
