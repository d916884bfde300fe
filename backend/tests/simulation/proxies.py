"""The simulated HAProxies as routing.py reaches them: `haproxy.runtime.send_all` answered by the cluster's proxies
instead of admin sockets (the commands are routing's own, parsed by `Cluster.proxy_command`). Which API instance
sends is the running task's (`CURRENT`, set by the harness for the operation and the reconcile): a crashed instance's
commands never arrive, and a proxy may be unreachable (the fault plan's)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ferry_control.services.haproxy import runtime
from tests.simulation.clock import now
from tests.simulation.cluster import Change, Cluster
from tests.simulation.faults import Fault, FaultPlan, Instance

#: The API instance the running task belongs to.
CURRENT: contextvars.ContextVar[tuple[Instance, Cluster, FaultPlan] | None] = contextvars.ContextVar(
    "simulated_instance", default=None
)


async def send_all(proxies: Sequence[str], commands: Sequence[str], timeout_s: float) -> list[runtime.ProxyOutcome]:
    current = CURRENT.get()
    assert current is not None, "a proxy command outside a simulated instance"
    instance, cluster, faults = current
    outcomes = []
    for name in proxies:
        if instance.crashed.is_set():
            await instance.frozen()
        fault = faults.decide(instance, f"proxy {name}", "; ".join(commands), now(), proxy=True)
        await asyncio.sleep(0.0002)
        if fault is Fault.crash_before:
            instance.crash(f"before telling proxy {name} {commands}")
            await instance.frozen()
        if fault is Fault.unreachable:
            await asyncio.sleep(timeout_s)
            outcomes.append(runtime.ProxyOutcome(name, len(commands), f"no answer within {timeout_s:g} s"))
            continue
        cluster.advance(now())
        proxy = cluster.proxies[name]
        errors = [e for e in (cluster.proxy_command(proxy, c) for c in commands) if e is not None]
        in_flight = fault is Fault.crash_before and instance.woke_at is not None
        cluster.changes.append(Change(now(), instance.name, f"proxy {name}", "; ".join(commands), in_flight))
        await asyncio.sleep(0.0002)
        if fault is Fault.crash_after:
            instance.crash(f"after telling proxy {name} {commands}")
        if instance.crashed.is_set():
            await instance.frozen()
        if errors and all(e == runtime.NO_SUCH_BACKEND for e in errors):
            outcomes.append(runtime.ProxyOutcome(name, len(commands), skipped=True))
        else:
            outcomes.append(runtime.ProxyOutcome(name, len(commands), "; ".join(errors) if errors else None))
    return outcomes


@contextmanager
def simulated_proxies() -> Iterator[None]:
    """While in it, routing.py's proxy commands go to the simulated proxies."""
    real = runtime.send_all
    runtime.send_all = send_all
    try:
        yield
    finally:
        runtime.send_all = real
