"""`run_eagerly`: a coroutine runs in the caller up to its first suspension; only what is left after it becomes a
task, which sees what it awaited (result, exception, cancellation) exactly as if it had been awaited normally."""

from __future__ import annotations

import asyncio

import pytest

from ferry_control.core.eager import run_eagerly


async def test_a_coroutine_that_never_waits_is_done_within_the_call() -> None:
    done: list[str] = []

    async def send() -> None:
        done.append("sent")

    assert run_eagerly(send()) is None
    assert done == ["sent"], "finished before run_eagerly returned"


async def test_an_error_before_any_wait_is_raised_in_the_call() -> None:
    async def refuse() -> None:
        raise ConnectionResetError("gone")

    with pytest.raises(ConnectionResetError, match="gone"):
        run_eagerly(refuse())


async def test_a_coroutine_that_waits_goes_on_in_a_task_and_gets_what_it_awaited() -> None:
    drained: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    steps: list[str] = []

    async def send() -> None:
        steps.append("before")
        steps.append(await drained)
        await asyncio.sleep(0)  # a bare yield too
        steps.append("after")

    task = run_eagerly(send())
    assert task is not None and steps == ["before"], "ran up to its first wait in the call"
    drained.set_result("drained")
    async with asyncio.timeout(30):
        await task
    assert steps == ["before", "drained", "after"]


async def test_an_error_after_a_wait_is_the_tasks() -> None:
    drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def send() -> None:
        await drained

    task = run_eagerly(send())
    assert task is not None
    drained.set_exception(BrokenPipeError("reset"))
    with pytest.raises(BrokenPipeError, match="reset"):
        await task


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    cleaned: list[bool] = []

    async def send() -> None:
        try:
            await never
        finally:
            cleaned.append(True)

    task = run_eagerly(send())
    assert task is not None
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == [True] and never.cancelled(), "the cancellation reached what it was waiting on"
