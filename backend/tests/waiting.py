"""Waiting on a condition in the tests: the one poll loop of the suite. A check is called until it returns something
truthy (that value is returned), with a generous deadline; a timeout fails naming what was awaited and the last value
seen. Tests never sleep for a fixed time instead."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

#: Default bound on a wait: generous, so that only a condition that never holds fails, never a slow machine.
WAIT_S = 30.0
#: Pause after the first check; each later pause is twice the one before, up to POLL_MAX_S. A condition that holds
#: at once is seen at once, and one that takes seconds is checked ten times a second, not fifty: the checks (an admin
#: API call to each node, a `mariadb` client per query) cost CPU that the servers under test need on a small machine.
POLL_S = 0.02
POLL_MAX_S = 0.1

T = TypeVar("T")


def wait_until(what: str, check: Callable[[], T | None], timeout_s: float = WAIT_S) -> T:
    """Calls `check` until it returns something truthy (returned), failing after `timeout_s` with `what`. For code
    outside an event loop; inside one, use `eventually`."""
    deadline = time.monotonic() + timeout_s
    pause = POLL_S
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last: {result!r})")
        time.sleep(pause)
        pause = min(pause * 2, POLL_MAX_S)


async def eventually(
    what: str,
    check: Callable[[], T | None | Awaitable[T | None]],
    timeout_s: float = WAIT_S,
    *,
    in_thread: bool = False,
) -> T:
    """`wait_until` inside a test's event loop: `check` may be a coroutine function, and the loop runs between two
    checks. `in_thread` runs a blocking `check` (a synchronous HTTP call, a subprocess) in a worker thread so that the
    loop — often serving the app under test — goes on meanwhile."""
    last: object = None
    bound = asyncio.timeout(timeout_s)  # also bounds a check that hangs
    pause = POLL_S
    try:
        async with bound:
            while True:
                last = await asyncio.to_thread(check) if in_thread else check()
                if inspect.isawaitable(last):
                    last = await last
                if last:
                    return last  # type: ignore[return-value]
                await asyncio.sleep(pause)
                pause = min(pause * 2, POLL_MAX_S)
    except TimeoutError:
        if not bound.expired():
            raise
        raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last: {last!r})") from None
