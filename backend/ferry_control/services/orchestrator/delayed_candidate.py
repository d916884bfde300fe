"""A switchover's or drill's candidate delayed by configuration — its connection to the source applies each
transaction a set number of seconds after the source wrote it (MariaDB's MASTER_DELAY) — in words for the dry run's
advice and the candidate choice (pure).

What is true of such a move, and what the words say:

- a master's switchover: once the master is read-only, the candidate reaches its position only after applying what
  the master wrote in its last `delay` seconds, so writes may be refused that long. Before that, while the master
  takes writes, the move waits (at most its prepare timeout) until the predicted window fits its budget, and refuses
  having changed nothing when it never does (a steady load keeps the window near the delay);
- an intermediate master's switchover: nothing is read-only, but once the hub stops receiving, the candidate reaches
  the hub's position only after applying what the hub received in its last `delay` seconds; meanwhile the hub's
  other replicas receive nothing new, and the move is undone past `switchover_catch_up_timeout_s`;
- either way the delay ends with the move: the candidate's delayed connection is removed, the connections it takes
  (and the one its old source replicates over) carry no delay.

A delayed replica is never chosen automatically (`switchover.choose_best`, `candidates.exclusions`); named by the
operator (or a drill's fixed candidate) it may be, and these words say what that costs."""

from __future__ import annotations

from ferry_control.services.lag import seconds_words
from ferry_control.services.orchestrator.candidates import delay_of
from ferry_control.services.orchestrator.snapshot import Link


def delay_note(link: Link) -> str | None:
    """`replicates 30 s behind on purpose (MASTER_DELAY 30)` — the setting as the replica's kind names it — or None
    for a connection without a delay."""
    delay_s = delay_of(link)
    if not delay_s:
        return None
    driver = link.replica.driver
    setting = driver.delay_setting if driver is not None else "configured delay"
    return f"replicates {seconds_words(delay_s)} behind on purpose ({setting} {delay_s})"


def chosen_words(link: Link, *, hub: bool) -> str:
    """What the candidate choice adds for a delayed candidate the operator named (empty without a delay)."""
    note = delay_note(link)
    if note is None:
        return ""
    delay = seconds_words(delay_of(link))
    source = link.master.info.label
    waits = (
        f"it would take over only after applying what {source} received in its last {delay}"
        if hub
        else f"it would take writes only after applying what {source} wrote in its last {delay}"
    )
    return f"; it {note}: {waits}, and its delay ends with the move"


def left_out(links: list[Link]) -> str:
    """The delayed replicas an automatic choice passed over, in words (empty when none was)."""
    delayed = [f"{link.replica.info.label} {note}" for link in links if (note := delay_note(link)) is not None]
    return f"; never chosen automatically: {'; '.join(delayed)}" if delayed else ""


def dry_run_advice(
    link: Link,
    *,
    hub: bool,
    max_window_s: float,
    prepare_timeout_s: float,
    catch_up_timeout_s: float,
) -> list[str]:
    """The dry run's advice for a delayed candidate (none without a delay): what the move would wait for, what it
    does with the delay, and what to do instead."""
    note = delay_note(link)
    if note is None:
        return []
    delay_s = delay_of(link)
    delay = seconds_words(delay_s)
    candidate, source = link.replica.info.label, link.master.info.label
    if hub:
        wait = (
            f"once {source} stops receiving (its masters keep taking writes), {candidate} reaches {source}'s position "
            f"only after applying what {source} received in its last {delay}; meanwhile {source}'s other replicas "
            f"receive nothing new, and the move is undone if that takes more than {catch_up_timeout_s:g} s"
        )
        after = f"its connections to {source}'s masters carry no delay, nor does {source}'s to it"
    else:
        wait = (
            f"once {source} is read-only, {candidate} takes writes only after applying what {source} wrote in its "
            f"last {delay}, so writes may be refused that long"
        )
        if delay_s > max_window_s:
            wait += (
                f" — over the {max_window_s:g} s budget: while {source} takes writes the switchover waits (at most "
                f"its {prepare_timeout_s:g} s prepare timeout) for the window to fit, and refuses having changed "
                "nothing if it never does"
            )
        else:
            wait += f" (within the {max_window_s:g} s budget)"
        after = f"its connection to {source} is removed, and {source} follows it without a delay"
    return [
        f"{candidate} {note}: {wait}. Its delay ends with the move: {after}. Remove its delay first, or choose another "
        "candidate."
    ]
