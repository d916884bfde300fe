"""Runs a coroutine at once, in the caller, up to its first suspension — a task only for what is left after it.

A send to a socket that is not applying back-pressure finishes without ever suspending; starting a task for each
(the usual way to avoid waiting on one slow client) costs a task, a wake-up and a turn of the loop per send. The
event streams' fan-out (`services/stream_hub.py`) sends one batch to a thousand streams this way: each send runs to
its end in the fan-out's own call, and only a stream whose client is not reading gets a task to finish its send.
(Python 3.12's eager task factory does the same for every task; this is the one place that needs it.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator
from typing import Any


def run_eagerly(awaitable: Awaitable[None]) -> asyncio.Task[None] | None:
    """Runs `awaitable` (a coroutine) until it returns or first suspends: None when it returned (an exception it
    raised is raised here), otherwise a task that carries it on from where it suspended."""
    steps = awaitable.__await__()
    try:
        awaiting = steps.send(None)
    except StopIteration:
        return None
    return asyncio.ensure_future(_carry_on(steps, awaiting))


async def _carry_on(steps: Generator[Any, Any, None], awaiting: Any) -> None:
    await _Resumed(steps, awaiting)


class _Resumed:
    """Awaits what a started coroutine is suspended on, then drives the coroutine to its end (as `await` would
    have, had it been awaited from the start): results and exceptions, cancellation included, go to it."""

    def __init__(self, coroutine: Generator[Any, Any, None], awaiting: Any):
        self._coroutine = coroutine
        self._awaiting = awaiting

    def __await__(self) -> Generator[Any, Any, None]:
        coroutine, awaiting = self._coroutine, self._awaiting
        while True:
            try:
                sent = yield awaiting
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:  # noqa: BLE001 - thrown into the task (cancellation): the coroutine's own
                try:
                    awaiting = coroutine.throw(error)
                except StopIteration:
                    return
            else:
                try:
                    awaiting = coroutine.send(sent)
                except StopIteration:
                    return
