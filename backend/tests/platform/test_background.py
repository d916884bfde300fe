"""A background loop of the app (core/background.py) stops when asked, even when a cancellation is lost under it:
`stop()` cancels again until the task has ended, and says so in the log; a loop that had failed raises from `stop()`."""

from __future__ import annotations

import asyncio
import logging

import pytest

from ferry_control.core import background
from ferry_control.core.background import BackgroundTask


async def test_a_loop_is_cancelled_and_stop_returns_once_it_ended() -> None:
    ended = asyncio.Event()

    async def loop() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.set()

    task = BackgroundTask(loop, "plain")
    task.start()
    await asyncio.sleep(0)
    assert task.running
    await task.stop()
    assert ended.is_set() and not task.running
    await task.stop()  # stopping again is nothing


async def test_a_loop_that_lost_its_cancellation_is_cancelled_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # As a wait that ends at the moment it is cancelled does (asyncio.wait_for before 3.12): the first cancellation
    # is swallowed and the loop goes on with its next cycle.
    monkeypatch.setattr(background, "RECANCEL_AFTER_S", 0.05)
    swallowed = 0
    cycles = 0

    async def loop() -> None:
        nonlocal swallowed, cycles
        while True:
            cycles += 1
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                if swallowed == 0:
                    swallowed += 1
                    continue
                raise

    task = BackgroundTask(loop, "swallower")
    task.start()
    await asyncio.sleep(0.03)
    with caplog.at_level(logging.WARNING, logger="ferry_control.core.background"):
        async with asyncio.timeout(30):  # a bound on the test, not a measure: stop() returns in a tenth of a second
            await task.stop()
    assert swallowed == 1 and not task.running
    assert [r.getMessage() for r in caplog.records] == [
        "swallower went on after it was cancelled (a cancellation lost under it): cancelling again"
    ]


async def test_a_loop_that_had_failed_raises_its_error_from_stop() -> None:
    async def loop() -> None:
        raise RuntimeError("the loop broke")

    task = BackgroundTask(loop, "broken")
    task.start()
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="the loop broke"):
        await task.stop()
