"""A master move's point of no return, judged from the servers themselves — one rule for a move that stopped while
it ran (error, cancel, a lost answer) and for the reconcile after a crash.

A switchover makes the candidate writable before it cuts the candidate's connection to the old master (the window
ends at the first, the second follows while the new master takes writes). The rule, in order:

1. the candidate's connection to the old master is gone: **completed** — only a move past read-only off cuts it,
   and the candidate then holds everything up to the old master's final position, so completing loses nothing;
2. else the candidate is fenced (read-only on, read back, and the client commits it admitted before that landed —
   ferryd lands them after the flag; MariaDB's read-only waits for them), then it has passed the point of no return
   exactly when its binlog holds a transaction of its own beyond what the old master has (a client's write it took
   as the master; the errant-GTID rule of `gtid.errant_gtids`, its own server_id only): **completed** (undoing would
   leave that write on no master), else **undone** as if it had never been writable. When the old master cannot be
   read, the old master's final position P recorded by the move stands in for it; without P the verdict is unknown
   (`Undecidable`): nothing is moved, and the record says so."""

from __future__ import annotations

from dataclasses import dataclass

from ferry_control.drivers.errors import DriverError
from ferry_control.services.orchestrator.gtid import errant_gtids, parse_state
from ferry_control.services.orchestrator.snapshot import ServerView

#: How long the fence waits for the candidate's commits in flight to land (they land in milliseconds).
IN_FLIGHT_BOUND_S = 10.0


@dataclass(frozen=True)
class Verdict:
    """Whether the move is completed (else undone), and why, in words for the move's record."""

    complete: bool
    detail: str


@dataclass(frozen=True)
class Judgement:
    """Whether the fenced candidate took writes the old master lacks, and why it is known."""

    took_writes: bool
    detail: str


class Undecidable(Exception):
    """Whether the candidate took writes is unknown (it could not be fenced or read; or the old master could not be
    read and its final position is not known): neither undo nor completion may run; the message says what failed."""


async def decide(candidate: ServerView, old_master: ServerView, connection: str, final_position: str | None) -> Verdict:
    """The rule of the module for the candidate's `connection` to `old_master`; `final_position` is the old master's
    position once writes stopped (P), when the move got that far. Fences the candidate unless its connection is gone.
    Raises `Undecidable`."""
    label, old_label = candidate.info.label, old_master.info.label
    try:
        connections = {c.name: c for c in await candidate.require_driver().replica_connections()}
    except DriverError as e:
        raise Undecidable(f"{label} could not be read ({e.code}: {e.message})") from e
    kept = connections.get(connection)
    if kept is None or kept.master_address != old_master.info.protocol_address:
        return Verdict(True, f"{label} no longer replicates from {old_label} over {connection!r}: completed")
    judged = await judge(candidate, old_master, final_position)
    return Verdict(judged.took_writes, judged.detail + (": completed" if judged.took_writes else ": undone"))


async def judge(candidate: ServerView, old_master: ServerView, final_position: str | None = None) -> Judgement:
    """Rule 2 alone: fences `candidate` (read-only read back, its commits in flight landed) and says whether its
    binlog holds a write of its own beyond the old master's (or `final_position`'s, when the old master cannot be
    read). Raises `Undecidable`."""
    label, old_label = candidate.info.label, old_master.info.label
    try:
        driver = candidate.require_driver()
        if not await driver.set_read_only(True):
            raise Undecidable(f"{label} still reports read_only off after read-only on")
        if driver.counts_commits_in_flight:
            await driver.wait_commits_landed(IN_FLIGHT_BOUND_S)
        status = await driver.status()
    except DriverError as e:
        raise Undecidable(f"{label} could not be fenced or read ({e.code}: {e.message})") from e
    mine = status.positions
    try:
        theirs = await old_master.require_driver().positions()
        against, state, name = theirs.binlog, theirs.binlog_state, f"{old_label}'s {theirs.binlog or '(empty)'}"
    except DriverError as e:
        if final_position is None:
            raise Undecidable(
                f"{label} is read-only; {old_label} cannot be read ({e.code}: {e.message}) and its position when "
                "writes stopped is not recorded"
            ) from e
        against, state, name = final_position, "", f"{old_label}'s position when writes stopped, {final_position}"
    # Its own transactions only: a multi-source candidate also logs other masters' domains the old master lacks.
    taken = [
        e
        for e in errant_gtids(
            candidate_binlog_pos=mine.binlog,
            candidate_binlog_state=mine.binlog_state,
            candidate_server_id=status.server_id,
            master_binlog_pos=against,
            master_binlog_state=state,
        )
        if parse_state(e.gtid)[0].server == status.server_id
    ]
    if taken:
        listed = ", ".join(e.gtid for e in taken)
        return Judgement(True, f"{label} took writes as the master ({listed} beyond {name})")
    return Judgement(False, f"{label} took no write (its binlog {mine.binlog or '(empty)'} is all in {name})")
