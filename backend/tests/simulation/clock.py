"""Virtual time for the simulation: an asyncio event loop whose clock jumps to the next timer whenever every task
waits (no real second passes for a `sleep(10)`), and the orchestrator's modules reading that clock instead of the
wall clock while a schedule runs.

The loop never waits on a file descriptor: it advances its clock by the timeout asyncio asked for — the time to the
earliest timer — so every wait ends in the order its deadline says, deterministically. A loop with nothing ready and
no timer would wait forever: that is a deadlock of the simulated system and raises `Deadlock`."""

from __future__ import annotations

import asyncio
import selectors
import sys
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any


class Deadlock(RuntimeError):
    """Every task waits and no timer is due: the simulated system can never move again."""


class _VirtualSelector(selectors.SelectSelector):
    """Reports no descriptor ready (a simulation does no I/O: nothing of it uses threads or sockets, so the loop's
    self-pipe never matters); moves the loop's clock by `timeout` instead of waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            raise Deadlock("every task waits and no timer is scheduled")
        self.now += timeout
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop on virtual time (starts at 0.0, in seconds). The newest one is the simulation's clock (`now`):
    schedules run one after another."""

    def __init__(self) -> None:
        global _clock
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)
        # Timers are due when their time is reached exactly (the clock lands on them).
        self._clock_resolution = 1e-9
        _clock = self._virtual

    def time(self) -> float:
        return self._virtual.now


_clock = _VirtualSelector()


def now() -> float:
    """The simulation's virtual time."""
    return _clock.now


#: The wall clock the orchestrator's lock and lease read while a schedule runs: virtual seconds after this.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def virtual_now() -> datetime:
    """The simulation's virtual time as a wall-clock time (runner.py's `_now`, the lock's lease)."""
    return EPOCH + timedelta(seconds=now())


class _ClockModule(types.ModuleType):
    """Stands in for `time` in a module: monotonic and perf_counter read the running loop's clock; everything else
    is the real `time`."""

    def __init__(self) -> None:
        super().__init__("time")

    def monotonic(self) -> float:
        return now()

    def perf_counter(self) -> float:
        return now()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


#: The packages whose modules read the virtual clock while a schedule runs.
VIRTUAL_TIME_PACKAGES = ("ferry_control.services.orchestrator",)


#: The modules whose `_now()` (the wall clock their lock and lease read) is the virtual one while a schedule runs.
VIRTUAL_WALL_CLOCK = ("ferry_control.services.orchestrator.runner",)


@contextmanager
def virtual_time() -> Iterator[None]:
    """While in it, every loaded module of `VIRTUAL_TIME_PACKAGES` that imported `time` reads the running loop's
    clock through it (the orchestrator's deadlines and measured windows are virtual seconds), and runner.py's `_now`
    (the lock's lease, its expiry) is virtual time too."""
    clock = _ClockModule()
    walls = [(sys.modules[name], sys.modules[name]._now) for name in VIRTUAL_WALL_CLOCK]  # type: ignore[attr-defined]
    for module, _ in walls:
        module._now = virtual_now  # type: ignore[attr-defined]
    patched = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith(VIRTUAL_TIME_PACKAGES) and getattr(module, "time", None) is time
    ]
    for module in patched:
        module.time = clock  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in patched:
            module.time = time  # type: ignore[attr-defined]
        for module, real in walls:
            module._now = real  # type: ignore[attr-defined]
