"""A master move's point of no return, judged from the servers themselves — one rule for a move that stopped while
it ran (error, cancel) and for the reconcile after a crash.

A switchover makes the candidate writable before it cuts the candidate's connection to the old master (the window
ends at the first, the second follows while the new master takes writes). Once read-only off was sent, whether the
move can still be undone is a fact about the candidate, not about which step was reached: it is fenced first
(read-only, confirmed, so it takes nothing more while this is decided), then it has passed the point of no return
exactly when its binlog holds a transaction of its own that the old master lacks — a client's write it took as the
master (the errant-GTID rule of `gtid.errant_gtids`). Undoing then would leave that write on no master; completing
the move keeps it. Nothing taken: the move is undone as if the candidate had never been writable."""

from __future__ import annotations

from dataclasses import dataclass

from ferry_control.drivers.errors import DriverError
from ferry_control.services.orchestrator.gtid import errant_gtids, parse_state
from ferry_control.services.orchestrator.snapshot import ServerView


@dataclass(frozen=True)
class Verdict:
    """Whether the candidate took writes, and why it is known, in words for the move's record."""

    took_writes: bool
    detail: str


class Undecidable(Exception):
    """The candidate could not be fenced or read: whether it took writes is unknown, so neither undo nor completion
    may run; the message says what failed."""


async def judge(candidate: ServerView, old_master: ServerView) -> Verdict:
    """Fences `candidate` (read-only, read back) and says whether it took writes the old master lacks. An old master
    that cannot be read counts as lacking them (the move is then completed: undoing would need it anyway).
    Raises `Undecidable` when the candidate cannot be fenced or read."""
    label = candidate.info.label
    try:
        driver = candidate.require_driver()
        if not await driver.set_read_only(True):
            raise Undecidable(f"{label} still reports read_only off after read-only on")
        status = await driver.status()
    except DriverError as e:
        raise Undecidable(f"{label} could not be fenced or read ({e.code}: {e.message})") from e
    mine = status.positions
    try:
        theirs = await old_master.require_driver().positions()
    except DriverError as e:
        return Verdict(
            True,
            f"{label} is read-only; {old_master.info.label} cannot be read ({e.code}: {e.message}), so whether "
            f"{label} took writes it lacks is unknown: the move is completed",
        )
    # Its own transactions only: a multi-source candidate also logs other masters' domains the old master lacks.
    taken = [
        e
        for e in errant_gtids(
            candidate_binlog_pos=mine.binlog,
            candidate_binlog_state=mine.binlog_state,
            candidate_server_id=status.server_id,
            master_binlog_pos=theirs.binlog,
            master_binlog_state=theirs.binlog_state,
        )
        if parse_state(e.gtid)[0].server == status.server_id
    ]
    if taken:
        listed = ", ".join(e.gtid for e in taken)
        return Verdict(True, f"{label} took writes as the master ({listed} not on {old_master.info.label}): completed")
    return Verdict(
        False,
        f"{label} took no write (its binlog {mine.binlog or '(empty)'} is all on {old_master.info.label}'s "
        f"{theirs.binlog or '(empty)'}): undone",
    )
