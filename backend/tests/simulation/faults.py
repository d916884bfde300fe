"""Faults of a schedule, decided at each call the control plane makes (a driver call, a proxy command, a step
boundary) from the schedule's own random stream:

- a server unreachable for a while (every call to it fails, nothing done);
- a lost answer: the call fails before it took effect, or after (the server did it, the caller cannot know);
- the API instance running the operation crashes: before a call takes effect, after it, or between two steps. From
  then on that instance is frozen — each of its pending and later calls (and its database statements) waits — and
  the harness hands the servers to a reconcile by another instance. Mostly it stays frozen for good; in some
  schedules (`draw_wake`, from a random stream of its own) it was only paused — a long GC pause, a VM frozen, a
  partition healed — and wakes up once the reconcile is done (perhaps while another operation holds the cluster):
  its pending call and its later steps go on, and only the real fencing (runner.py) may stop them.

An `Instance` is one API process as the servers see it: its calls, and whether it died or sleeps."""

from __future__ import annotations

import asyncio
import enum
import random
from dataclasses import dataclass, field

from ferry_control.drivers.errors import ServerUnreachable


class Fault(enum.Enum):
    unreachable = "unreachable"
    lost_before = "answer lost before it took effect"
    lost_after = "answer lost after it took effect"
    crash_before = "API crash before it took effect"
    crash_after = "API crash after it took effect"
    crash_at_step = "API crash between two steps"


class Dead(ServerUnreachable):
    """A call of a crashed instance, released when the schedule is torn down: it did nothing."""


class Instance:
    """One API process: its calls are counted; once crashed, it never acts again."""

    def __init__(self, name: str, *, crash_at: int | None = None) -> None:
        #: When it woke up from its pause (None: never paused, or never woke).
        self.woke_at: float | None = None
        self.name = name
        #: The index of the call (or step boundary) at which it crashes; None: never.
        self.crash_at = crash_at
        self.calls = 0
        self.crashed = asyncio.Event()
        self.crash_point: str | None = None
        self._released = asyncio.get_running_loop().create_future()
        self._woken = asyncio.get_running_loop().create_future()

    def count(self) -> int:
        self.calls += 1
        return self.calls

    def crash(self, where: str) -> None:
        if not self.crashed.is_set():
            self.crash_point = where
            self.crashed.set()

    async def frozen(self) -> None:
        """Waits until the schedule ends, then fails: a crashed instance's call — or, when it wakes up before,
        returns: the paused call goes on where it stopped."""
        await asyncio.wait({self._released, self._woken}, return_when=asyncio.FIRST_COMPLETED)
        if self._woken.done():
            return
        raise Dead(self.name, "dead", "this API instance crashed")

    def wake(self, at: float) -> None:
        """The pause ends: every call waiting in `frozen` goes on, and later ones run (it crashes no more)."""
        if self.crashed.is_set() and not self._woken.done():
            self.woke_at = at
            self.crashed.clear()
            self._woken.set_result(None)

    def release(self) -> None:
        if not self._released.done():
            self._released.set_result(None)


@dataclass(frozen=True)
class WakeUp:
    """A crash that was a pause: the instance wakes up `after_s` once the reconcile released the cluster; with
    `second_operation`, another operation (of the reconcile's instance) holds the cluster's lock meanwhile."""

    after_s: float
    second_operation: bool


#: Of the schedules whose instance crashes, the share where it wakes up again.
WAKE_RATE = 0.3


def draw_wake(kind: str, seed: int) -> WakeUp | None:
    """Whether a crash of this schedule is a pause, from a random stream of its own (`Random("wake <kind> <seed>")`):
    every other draw of the schedule is unchanged, so a schedule whose instance stays frozen is as it was."""
    rng = random.Random(f"wake {kind} {seed}")
    if rng.random() >= WAKE_RATE:
        return None
    return WakeUp(after_s=rng.uniform(0.0, 0.3), second_operation=rng.random() < 0.5)


@dataclass
class FaultPlan:
    """The schedule's fault rates and what was injected."""

    rng: random.Random
    #: Per call: a lost answer, a server becoming unreachable (for `unreachable_s` at most).
    lost_rate: float = 0.0
    unreachable_rate: float = 0.0
    unreachable_s: float = 0.3
    proxy_unreachable_rate: float = 0.0
    #: Servers (control plane id) or proxies unreachable until a time.
    down_until: dict[str, float] = field(default_factory=dict)
    #: What was injected, in order (for a failure's message).
    log: list[str] = field(default_factory=list)

    def decide(self, instance: Instance, target: str, call: str, now: float, *, proxy: bool = False) -> Fault | None:
        """The fault of this call, if any."""
        index = instance.count()
        if instance.crash_at is not None and index == instance.crash_at and not instance.crashed.is_set():
            fault = self.rng.choice((Fault.crash_before, Fault.crash_after))
            self.log.append(f"{now:.6f} {instance.name} #{index} {target} {call}: {fault.value}")
            return fault
        if self.down_until.get(target, -1.0) > now:
            self.log.append(f"{now:.6f} {instance.name} #{index} {target} {call}: unreachable")
            return Fault.unreachable
        rate = self.proxy_unreachable_rate if proxy else self.unreachable_rate
        if rate and self.rng.random() < rate:
            self.down_until[target] = now + self.rng.uniform(0.0, self.unreachable_s)
            self.log.append(f"{now:.6f} {instance.name} #{index} {target} {call}: unreachable from now")
            return Fault.unreachable
        if self.lost_rate and not proxy and self.rng.random() < self.lost_rate:
            fault = self.rng.choice((Fault.lost_before, Fault.lost_after))
            self.log.append(f"{now:.6f} {instance.name} #{index} {target} {call}: {fault.value}")
            return fault
        return None

    def at_step(self, instance: Instance, step: str, now: float) -> bool:
        """Whether the instance crashes at the start of this step."""
        index = instance.count()
        if instance.crash_at is not None and index == instance.crash_at and not instance.crashed.is_set():
            self.log.append(f"{now:.6f} {instance.name} #{index} step {step}: {Fault.crash_at_step.value}")
            return True
        return False
