"""Apply rate against commit rate, per GTID domain: how many transactions a master commits per second and how many
its replica applies per second, from two readings of their positions a known time apart, and whether the replica
keeps up ("keeps up", "falls behind by N txn/s") — what tells an operator, and a switchover's catch-up, whether
waiting brings the replica closer.

`domain_rates` is the arithmetic (no I/O): a rate is the seq_no advance of a domain between two readings divided by
the time between them; a master's readings are its gtid_binlog_pos (what it committed), a replica's its
gtid_current_pos (what it has: applied, or its own). `read_live` takes two readings of both servers through their
drivers `interval_s` apart. Seconds_Behind_Master is not a rate, and lies on a delayed replica: it is not used."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ferry_control.core.gtid import by_domain
from ferry_control.drivers.base import Positions, ServerDriver

Verdict = Literal["keeps_up", "falls_behind", "idle", "unknown"]
#: A replica falls behind only when the master outpaces it by more than this many transactions per second, or this
#: share of the master's rate, whichever is more: two readings of two servers are never taken at the same instant.
TOLERANCE_TXN_S = 1.0
TOLERANCE_SHARE = 0.05


@dataclass(frozen=True)
class Reading:
    """A server's GTID position at a time (seconds, on any one clock shared by the readings compared)."""

    at_s: float
    position: str


@dataclass(frozen=True)
class DomainRates:
    """One domain: the master's commit rate, the replica's apply rate (transactions per second), how far behind
    the replica was at the last reading, and what that means."""

    domain: int
    master_commit_rate: float | None
    apply_rate: float | None
    behind: int | None
    verdict: Verdict
    #: master_commit_rate − apply_rate when the replica falls behind (transactions per second), else None.
    falls_behind_by: float | None
    #: The verdict in words ("keeps up", "falls behind by 310 txn/s", …).
    words: str


def rate(before: Reading, after: Reading, domain: int) -> float | None:
    """Transactions per second of `domain` between the readings; None when the time does not advance or the domain
    is not in the first reading (where it started is not known)."""
    elapsed = after.at_s - before.at_s
    first, last = by_domain(before.position).get(domain), by_domain(after.position).get(domain)
    if elapsed <= 0 or last is None:
        return None
    if first is None:
        return None
    return max(0, last.seq - first.seq) / elapsed


def judge(master_rate: float | None, apply_rate: float | None, behind: int | None) -> tuple[Verdict, float | None, str]:
    """The verdict of one domain, its shortfall (txn/s) when falling behind, and both in words."""
    if master_rate is None or apply_rate is None or behind is None:
        return "unknown", None, "not measured"
    if master_rate == 0 and behind == 0:
        return "idle", None, "idle: no commits, nothing to apply"
    gap = master_rate - apply_rate
    if behind > 0 and gap > max(TOLERANCE_TXN_S, TOLERANCE_SHARE * master_rate):
        return "falls_behind", round(gap, 1), f"falls behind by {gap:,.0f} txn/s ({behind:,} transactions behind)"
    if behind > 0 and apply_rate > master_rate:
        catch_up_s = behind / (apply_rate - master_rate)
        return "keeps_up", None, f"keeps up: catching up {behind:,} transactions in ~{catch_up_s:,.1f} s at this load"
    return "keeps_up", None, "keeps up"


def domain_rates(
    master_before: Reading, master_after: Reading, replica_before: Reading, replica_after: Reading,
    domains: Iterable[int] | None = None,
) -> list[DomainRates]:  # fmt: skip
    """Per domain of the master's last reading (or of `domains`): the two rates, how far behind the replica's last
    reading is from the master's, and the verdict. The master's readings are its gtid_binlog_pos, the replica's
    its gtid_current_pos."""
    master_last, replica_last = by_domain(master_after.position), by_domain(replica_after.position)
    found = []
    for domain in sorted(master_last.keys() if domains is None else set(domains)):
        master_rate = rate(master_before, master_after, domain)
        apply_rate = rate(replica_before, replica_after, domain)
        committed, applied = master_last.get(domain), replica_last.get(domain)
        behind = None if committed is None else max(0, committed.seq - (applied.seq if applied else 0))
        verdict, short, words = judge(master_rate, apply_rate, behind)
        found.append(DomainRates(
            domain=domain, master_commit_rate=None if master_rate is None else round(master_rate, 1),
            apply_rate=None if apply_rate is None else round(apply_rate, 1), behind=behind, verdict=verdict,
            falls_behind_by=short, words=words,
        ))  # fmt: skip
    return found


def overall(domains: list[DomainRates]) -> tuple[Verdict, str]:
    """A connection's verdict from its domains': it falls behind when one does (the shortfalls summed)."""
    behind = [d for d in domains if d.verdict == "falls_behind"]
    if behind:
        total = sum(d.falls_behind_by or 0.0 for d in behind)
        where = ", ".join(f"domain {d.domain}" for d in behind)
        return "falls_behind", f"falls behind by {total:,.0f} txn/s ({where})"
    if any(d.verdict == "keeps_up" for d in domains):
        return "keeps_up", "keeps up"
    if domains and all(d.verdict == "idle" for d in domains):
        return "idle", "idle: no commits, nothing to apply"
    return "unknown", "not measured"


async def _read(driver: ServerDriver, master: bool) -> Reading:
    """One reading, timed at the middle of its round trip (monotonic clock)."""
    started = time.monotonic()
    positions: Positions = await driver.positions()
    at = (started + time.monotonic()) / 2
    return Reading(at, positions.binlog if master else positions.current)


async def read_live(
    master: ServerDriver, replica: ServerDriver, interval_s: float
) -> tuple[Reading, Reading, Reading, Reading]:
    """Two readings of the master (gtid_binlog_pos) and of the replica (gtid_current_pos), `interval_s` apart:
    (master_before, master_after, replica_before, replica_after), for `domain_rates`."""
    master_before, replica_before = await asyncio.gather(_read(master, True), _read(replica, False))
    await asyncio.sleep(interval_s)
    master_after, replica_after = await asyncio.gather(_read(master, True), _read(replica, False))
    return master_before, master_after, replica_before, replica_after


async def measure_live(master: ServerDriver, replica: ServerDriver, interval_s: float) -> list[DomainRates]:
    """`read_live`, then `domain_rates` over the master's domains."""
    return domain_rates(*await read_live(master, replica, interval_s))
