"""A drill's live canary writer: in every domain, one small canary write after another (a steady rate, bounded in
count) to whichever server is the writable master, before, during and after a switchover — and the proof
afterwards that every write it was told had committed is on every server.

The writer follows the master through the drivers of the cluster's servers: it writes to the server it last found
writable with no replication connection of its own; a refusal (a read-only server, during the switch) or a lost
answer sends it looking again (each server's status). Every attempt ends in its ledger as one of

- `acknowledged`: the server answered with the canary's GTID (kept, with the time of the answer);
- `refused`: the server said no, or could not be reached to be asked — nothing was written;
- `unknown`: the write was sent and its answer lost — it may have committed or not (never counted as lost).

From the ledger: counts per phase (`before` the switch, `during` a switch, `after` it), the write-unavailability
window the writer saw for each switch (its last acknowledged write on the old master → its first on the new one),
and, once it stopped, `verify_ledger`: every server reaches the acknowledged GTIDs (bounded) and holds every
acknowledged canary with its content; any missing is lost, and a GTID given to two canaries is duplicated."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ferry_control.drivers.base import ServerDriver
from ferry_control.drivers.errors import DriverError, ServerRefused, ServerUnreachable, WriteOutcomeUnknown
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.gtid import join_all, position

Phase = Literal["before", "during", "after"]
Outcome = Literal["acknowledged", "refused", "unknown"]
PHASES: tuple[Phase, ...] = ("before", "during", "after")
OUTCOMES: tuple[Outcome, ...] = ("acknowledged", "refused", "unknown")
#: Lost and duplicated canaries named in a report (the counts are exact).
NAMED_MAX = 20
#: How long stop() waits for the writes in flight to be answered (each is bounded by its driver's own timeouts).
STOP_WAIT_S = 30.0
#: Acknowledged canaries kept in the verification step's record (key, GTID, server, phase, time), at most.
RECORDED_MAX = 10_000


@dataclass(frozen=True)
class WriterServer:
    """One server of the cluster as the writer and the verification see it."""

    server_id: int
    label: str
    driver: ServerDriver


@dataclass(frozen=True)
class Attempt:
    """One canary write and how it ended."""

    key: str
    domain: int
    #: Its number in its domain (0, 1, …).
    n: int
    phase: Phase
    #: The server it was sent to (None: no writable master was found to send it to).
    server_id: int | None
    outcome: Outcome
    #: The GTID the server answered with (acknowledged only).
    gtid: str | None
    #: When the answer came, in seconds since the writer started.
    at_s: float
    #: The fields written (what every server must hold under `key`).
    fields: dict[str, object]
    #: The error code of a refusal or lost answer.
    error: str | None = None


@dataclass
class SwitchMark:
    """A switch the writer lived through (`switch`, `switch_back`), with when it ran (writer seconds)."""

    name: str
    old_master_registered_server_id: int
    new_master_registered_server_id: int
    started_s: float
    ended_s: float | None = None
    succeeded: bool = False


@dataclass
class CanaryLedger:
    """Every attempt of one writer, and the switches it saw."""

    attempts: list[Attempt] = field(default_factory=list)
    switches: list[SwitchMark] = field(default_factory=list)
    #: A domain stopped writing because it reached the bound on its count.
    capped: bool = False

    def acknowledged(self) -> list[Attempt]:
        return [a for a in self.attempts if a.outcome == "acknowledged"]

    def counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {phase: dict.fromkeys(OUTCOMES, 0) for phase in PHASES}
        for a in self.attempts:
            counts[a.phase][a.outcome] += 1
        return counts

    def window(self, mark: SwitchMark) -> dict[str, Any]:
        """The write-unavailability window this writer saw across one switch: from its last acknowledged write on
        the old master before its first acknowledged write on the new master (after the switch began) to that one.
        None when the switch did not complete or no write got through on the new master."""
        window: dict[str, Any] = {
            "switch": mark.name, "old_master_registered_server_id": mark.old_master_registered_server_id,
            "new_master_registered_server_id": mark.new_master_registered_server_id, "window_s": None,
        }  # fmt: skip
        acked = self.acknowledged()
        first_new = min(
            (a.at_s for a in acked if a.server_id == mark.new_master_registered_server_id and a.at_s >= mark.started_s),
            default=None,
        )
        if not mark.succeeded or first_new is None:
            return window
        last_old = max(
            (a.at_s for a in acked if a.server_id == mark.old_master_registered_server_id and a.at_s <= first_new),
            default=None,
        )
        if last_old is not None:
            window["window_s"] = round(first_new - last_old, 6)
        return window


class CanaryWriter:
    """Writes canaries in `domains`, one task per domain, every `interval_s`, at most `per_domain_max` each, keys
    `run<run>_d<domain>_w<n>`. `start()`, `switching(...)` around each switch, `pause()`/`resume()` around a
    verification that needs the cluster still, `stop()`."""

    def __init__(
        self,
        servers: Sequence[WriterServer],
        domains: Sequence[int],
        *,
        run_id: int,
        operation_id: int,
        interval_s: float,
        per_domain_max: int,
        clock: Callable[[], float] = time.perf_counter,
    ):
        assert interval_s > 0 and per_domain_max > 0 and domains
        self.servers = list(servers)
        self.domains = sorted(set(domains))
        self.run_id = run_id
        self.operation_id = operation_id
        self.interval_s = interval_s
        self.per_domain_max = per_domain_max
        self.ledger = CanaryLedger()
        self.phase: Phase = "before"
        self._clock = clock
        self._started = clock()
        #: The server writes go to (None: look for the writable master first).
        self._target: WriterServer | None = None
        self._finding = asyncio.Lock()
        #: Set while the writer may write; cleared by pause().
        self._running = asyncio.Event()
        #: Set by stop(): each domain ends after the write it has in flight (so every write sent is in the ledger).
        self._stopping = asyncio.Event()
        #: Writes sent and not yet answered.
        self._in_flight = 0
        self._idle = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []

    def key(self, domain: int, n: int) -> str:
        return f"run{self.run_id}_d{domain}_w{n}"

    def now_s(self) -> float:
        return self._clock() - self._started

    def start(self) -> None:
        self._running.set()
        self._tasks = [asyncio.create_task(self._write_domain(d), name=f"canary-writer-d{d}") for d in self.domains]

    async def stop(self) -> None:
        """Ends every domain's task once its write in flight has its answer (bounded: `STOP_WAIT_S`, then they are
        cancelled and a write cut short is not in the ledger — never counted acknowledged)."""
        self._stopping.set()
        self._running.set()
        try:
            async with asyncio.timeout(STOP_WAIT_S):
                await asyncio.gather(*self._tasks, return_exceptions=True)
        except TimeoutError:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def pause(self) -> None:
        """Returns once no write is in flight; none is sent until resume()."""
        self._running.clear()
        async with self._idle:
            await self._idle.wait_for(lambda: self._in_flight == 0)

    def resume(self) -> None:
        self._running.set()

    def switch_started(
        self, name: str, old_master_registered_server_id: int, new_master_registered_server_id: int
    ) -> SwitchMark:
        mark = SwitchMark(name, old_master_registered_server_id, new_master_registered_server_id, self.now_s())
        self.ledger.switches.append(mark)
        self.phase = "during"
        return mark

    def switch_ended(self, mark: SwitchMark, succeeded: bool) -> None:
        mark.ended_s, mark.succeeded = self.now_s(), succeeded
        self.phase = "after"

    def acknowledged_since(self, domain: int, since_s: float, server_id: int | None = None) -> int:
        return sum(
            1 for a in self.ledger.attempts
            if a.domain == domain and a.outcome == "acknowledged" and a.at_s >= since_s
            and (server_id is None or a.server_id == server_id)
        )  # fmt: skip

    async def wait_acknowledged(self, since_s: float, timeout_s: float, server_id: int | None = None) -> list[int]:
        """Waits (bounded) until every domain has an acknowledged canary answered after `since_s` (on `server_id`
        when given); returns the domains that have none."""
        deadline = self._clock() + timeout_s
        while True:
            missing = [d for d in self.domains if not self.acknowledged_since(d, since_s, server_id)]
            if not missing or self._clock() >= deadline or not any(not t.done() for t in self._tasks):
                return missing
            await asyncio.sleep(self.interval_s)

    # -- writing ---------------------------------------------------------------------------------------------

    async def _master(self) -> WriterServer | None:
        """The server to write to: the one last found writable, else the one server that reports itself writable
        and replicates from nobody (None: no such server right now)."""
        async with self._finding:
            if self._target is not None:
                return self._target
            writable = []
            for server in self.servers:
                try:
                    status = await server.driver.status()
                except DriverError:
                    continue
                if not status.read_only and not status.connections:
                    writable.append(server)
            self._target = writable[0] if len(writable) == 1 else None
            return self._target

    def _lost_target(self, server: WriterServer) -> None:
        if self._target is server:
            self._target = None

    async def _write_domain(self, domain: int) -> None:
        for n in range(self.per_domain_max):
            await self._running.wait()
            if self._stopping.is_set():
                return
            began = self._clock()
            await self._write_one(domain, n)
            try:
                async with asyncio.timeout(max(0.0, self.interval_s - (self._clock() - began))):
                    await self._stopping.wait()
                return
            except TimeoutError:
                pass
        self.ledger.capped = True

    async def _write_one(self, domain: int, n: int) -> None:
        key, phase = self.key(domain, n), self.phase
        fields: dict[str, object] = {"run": self.run_id, "domain": domain, "n": n, "operation": self.operation_id}
        server = await self._master()
        if server is None:
            self._record(Attempt(key, domain, n, phase, None, "refused", None, self.now_s(), fields, "no_master"))
            return
        self._in_flight += 1
        try:
            gtid = await server.driver.write_canary(domain, key, fields)
            outcome: Outcome = "acknowledged"
            error = None
        except WriteOutcomeUnknown as e:
            gtid, outcome, error = None, "unknown", e.code
        except (ServerRefused, ServerUnreachable) as e:  # an answer saying no, or nobody to ask: nothing written
            gtid, outcome, error = None, "refused", e.code
        except DriverError as e:  # anything else: whether it committed is not known
            gtid, outcome, error = None, "unknown", e.code
        finally:
            self._in_flight -= 1
            async with self._idle:
                self._idle.notify_all()
        if outcome != "acknowledged":
            self._lost_target(server)
        self._record(Attempt(key, domain, n, phase, server.server_id, outcome, gtid, self.now_s(), fields, error))

    def _record(self, attempt: Attempt) -> None:
        self.ledger.attempts.append(attempt)


# -- verification ------------------------------------------------------------------------------------------------


@dataclass
class LedgerVerification:
    """What every server holds of the acknowledged canaries."""

    acknowledged: int = 0
    #: `label: key (gtid) …` per canary acknowledged and missing (or different) on a server.
    lost: list[str] = field(default_factory=list)
    #: GTIDs the servers gave to more than one acknowledged canary.
    duplicated: list[str] = field(default_factory=list)
    #: Servers that did not reach the acknowledged GTIDs within the bound (their canaries are still read).
    behind: list[str] = field(default_factory=list)

    def reasons(self) -> list[str]:
        reasons = []
        if self.lost:
            named = ", ".join(self.lost[:NAMED_MAX]) + (" …" if len(self.lost) > NAMED_MAX else "")
            reasons.append(f"{len(self.lost)} acknowledged canary write(s) lost: {named}")
        if self.duplicated:
            named = ", ".join(self.duplicated[:NAMED_MAX])
            reasons.append(f"{len(self.duplicated)} GTID(s) acknowledged for more than one canary write: {named}")
        return reasons


async def verify_ledger(
    servers: Sequence[WriterServer], acknowledged: Sequence[Attempt], timeout_s: float
) -> LedgerVerification:
    """Every server waits (at most `timeout_s`) to reach every acknowledged GTID, then every acknowledged canary is
    read back on it: missing, or with other fields, it is lost there."""
    found = LedgerVerification(acknowledged=len(acknowledged))
    by_gtid: dict[str, list[str]] = {}
    for a in acknowledged:
        assert a.gtid is not None, a
        by_gtid.setdefault(a.gtid, []).append(a.key)
    found.duplicated = sorted(f"{g} ({', '.join(keys)})" for g, keys in by_gtid.items() if len(keys) > 1)
    if not acknowledged:
        return found
    target = str(join_all(position(a.gtid) for a in acknowledged))
    for server in servers:
        reached = await actions.wait_reached(server.driver, target, timeout_s)
        if not reached.reached:
            found.behind.append(f"{server.label} is at {reached.position}, not at {target}")
        rows = await server.driver.read_canaries([a.key for a in acknowledged])
        for a in acknowledged:
            row = rows.get(a.key)
            if row is None or any(row.get(k) != v for k, v in a.fields.items()):
                found.lost.append(f"{server.label}: {a.key} ({a.gtid}, acknowledged {a.phase} the switch) is {row}")
    return found


def report(writer: CanaryWriter, verification: LedgerVerification | None) -> dict[str, Any]:
    """The writer's part of a drill's report (kept in the run's details as `canary_writer`)."""
    ledger = writer.ledger
    windows = [ledger.window(mark) for mark in ledger.switches]
    return {
        "interval_ms": round(writer.interval_s * 1000),
        "domains": writer.domains,
        "per_domain_max": writer.per_domain_max,
        "capped": ledger.capped,
        "phases": ledger.counts(),
        "window_s": windows[0]["window_s"] if windows else None,
        "windows": windows,
        "verified": verification is not None,
        "acknowledged": len(ledger.acknowledged()),
        "lost": len(verification.lost) if verification else 0,
        "duplicated": len(verification.duplicated) if verification else 0,
        "lost_canaries": verification.lost[:NAMED_MAX] if verification else [],
        "duplicated_gtids": verification.duplicated[:NAMED_MAX] if verification else [],
        "behind": verification.behind if verification else [],
    }


def ledger_record(acknowledged: Sequence[Attempt]) -> dict[str, Any]:
    """The acknowledged canaries as evidence, compactly: `[key, gtid, server_id, phase, at_s]` each (the first
    `RECORDED_MAX`)."""
    rows = [[a.key, a.gtid, a.server_id, a.phase, round(a.at_s, 4)] for a in acknowledged[:RECORDED_MAX]]
    return {"fields": ["key", "gtid", "registered_server_id", "phase", "at_s"], "acknowledged": rows,
            "truncated": len(acknowledged) > RECORDED_MAX}  # fmt: skip
