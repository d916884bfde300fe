"""Skip the transaction(s) that stopped a replica, then start it again: the DBA's `STOP SLAVE 'c';
SET @@default_master_connection = 'c'; SET GLOBAL sql_slave_skip_counter = N; START SLAVE 'c'` as an operation.

Steps: `preflight` (the connection exists and is stopped — by an SQL error, or by hand), `identify` (which GTIDs will
be skipped: the next ones after the replica's gtid_slave_pos in its master's binlog, else the GTID the server's error
names; refused when fewer are waiting, and whenever the skip could leave the failing GTID domain: the transactions
span domains, more than one would be skipped without knowing which, or the first is not the failing one), `skip`
(the driver's skip: a counter used at the next start, undone by clearing it if the start fails; or gtid_slave_pos
set past the GTIDs the server names, which are then the ones recorded), `start`, `verify` (bounded: the connection
runs again without error, the counter is used up, gtid_slave_pos is past what was skipped).

Skipping loses data on that replica: the skipped transactions are not applied there, yet their GTIDs count as
applied, so nothing ever brings them back. The result says so in words (`data_loss`), with the GTIDs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ferry_control.drivers.base import IoState, ReplicaConnection, ServerDriver, SqlState
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation import SkipTransactionsParams
from ferry_control.schemas.operation_results import SkipTransactionsResult, StopReason
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.gtid import from_gtids, parse_state, position
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.simple import _connection, _reachable
from ferry_control.services.orchestrator.snapshot import ServerView

#: The most transactions one operation skips (the API refuses more: 422).
SKIP_COUNT_MAX = 100
#: How long the started connection may take to run again before the result says it does not.
RUN_WAIT_S = 10.0
#: Pages of the master's binlog read back, at most, to find the transactions after the replica's position.
EVENT_PAGES_MAX = 20
EVENTS_PAGE = 500
#: SQL sides that are applying (or holding what they received to apply it): the connection is not stopped.
SQL_RUNNING = frozenset({SqlState.applying, SqlState.waiting_for_relay, SqlState.delaying, SqlState.paused})


def find_connection(connections: tuple[ReplicaConnection, ...], name: str) -> ReplicaConnection | None:
    return next((c for c in connections if c.name == name), None)


def is_stopped(connection: ReplicaConnection) -> bool:
    """Stopped for the skip counter: nothing applies (an SQL error, a stop by hand, an UNTIL reached). A MariaDB
    connection stopped by an SQL error keeps its IO thread receiving: that counts as stopped."""
    return not connection.running and connection.sql_state not in SQL_RUNNING


def why_not_stopped(label: str, connection: ReplicaConnection) -> str:
    return (
        f"{label}: connection {connection.name!r} is running (io {connection.io_state.value}, sql "
        f"{connection.sql_state.value}): only a stopped connection skips transactions — stop it first, or let it "
        "replicate"
    )


def stop_reason(connection: ReplicaConnection) -> dict[str, Any]:
    """What stopped the connection, as the server says it."""
    e = connection.last_error
    if e is None:
        return {"stopped_by": "stopped without an error", "sql_state": connection.sql_state.value}
    return {"stopped_by": f"{e.side} error", "code": e.code, "message": e.message}


def error_gtid(connection: ReplicaConnection) -> str | None:
    """The GTID of the transaction the connection's SQL error is about, where the server names it (the driver
    reports it with the error)."""
    e = connection.last_error
    return e.gtid if e is not None and e.side == "sql" else None


async def transactions_after(master: ServerDriver, applied: str, limit: int) -> list[str] | None:
    """The GTIDs of the first `limit` transactions of `master`'s binlog that a replica at `applied`
    (gtid_slave_pos) has not applied, oldest first — what its next start receives first. None when the binlog's
    recent history (EVENT_PAGES_MAX pages) does not reach back to `applied`."""
    have = position(applied)
    domains = {g.domain for g in have}
    newer: list[str] = []
    reached: set[int] = set()
    before = None
    for _ in range(EVENT_PAGES_MAX):
        page = await master.recent_events(EVENTS_PAGE, before=before)
        for tx in page.transactions:
            mine = have.get(tx.domain)
            if mine is not None and tx.seq_no <= mine.seq:
                reached.add(tx.domain)
            else:
                newer.append(tx.gtid)
        if (domains and reached >= domains) or page.next_before is None:
            return list(reversed(newer))[:limit]
        before = page.next_before
    return None


async def _identify(view: ServerView, master: ServerView | None, connection: ReplicaConnection,
                    count: int) -> dict[str, Any]:  # fmt: skip
    """Which GTIDs the skip will pass over, where the servers can tell."""
    assert view.status is not None
    applied = view.status.positions.slave
    named = error_gtid(connection)
    found: dict[str, Any] = {"gtid_slave_pos": applied, "error_gtid": named}
    if master is not None and master.reachable:
        try:
            waiting = await transactions_after(master.require_driver(), applied, count)
        except DriverError as e:
            found["master_binlog_unread"] = f"{e.code}: {e.message}"
            waiting = None
        if waiting is not None:
            found.update(skipped_gtids=waiting, source=f"the binlog of {master.info.label}", waiting=len(waiting))
            return found
    if named is not None and count == 1:
        found.update(skipped_gtids=[named], source="the replica's error", waiting=None)
        return found
    found.update(skipped_gtids=[], source=None, waiting=None)
    return found


def cross_domain_refusal(found: dict[str, Any], count: int) -> str | None:
    """Why the skip could pass over another GTID domain's transactions, or None. A skip counter passes over the next
    transactions whatever their domain: a domain that replicates well would lose a transaction with the failing
    one's. So a skip stays within one domain — every transaction it would pass over known, all of the failing
    transaction's domain, starting with the failing one where the server names it."""
    gtids: list[str] = found["skipped_gtids"]
    if count > 1 and found["waiting"] is None:
        return (
            f"the {count} transactions a skip would pass over cannot be told (the master's binlog was not read), so "
            "they might belong to other GTID domains than the failing one: skip one at a time"
        )
    domains = sorted({int(g.split("-", 1)[0]) for g in gtids})
    if len(domains) > 1:
        return (
            f"the next {len(gtids)} transactions ({', '.join(gtids)}) span GTID domains "
            f"{', '.join(str(d) for d in domains)}: a skip passes over whatever comes next, so a domain that "
            "replicates well would lose transactions too; skip only the failing domain's (a smaller count)"
        )
    named = found["error_gtid"]
    if named is not None and gtids and gtids[0] != named:
        return (
            f"the transaction a skip would pass over first is {gtids[0]}, not {named}, the one that stopped the "
            "connection: skipping could lose another transaction than the failing one"
        )
    return None


def data_loss(label: str, gtids: list[str], count: int) -> str:
    what = ", ".join(gtids) if gtids else f"the next {count} transaction(s) its master sent"
    one = len(gtids) == 1 or (not gtids and count == 1)
    was, it = ("was", "it") if one else ("were", "them")
    return (
        f"{what} {was} skipped on {label}: not applied there, yet counted as applied (its gtid_slave_pos is past "
        f"{it}), so replication will never bring {it} back. Its data differs from its master's by what "
        f"{'it' if one else 'they'} changed until that is repaired by hand (or the replica is rebuilt)."
    )


async def run_skip_transactions(ctx: OperationContext[SkipTransactionsParams, SkipTransactionsResult]) -> None:
    count = ctx.params.count
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        view = _reachable(snapshot, ctx.params.registered_server_id, "the replica")
        assert view.status is not None
        name = _connection(view, ctx.params.connection, ctx.settings.operations.replication_connection_name)
        connection = find_connection(view.status.connections, name)
        if connection is None:
            raise refused(f"{view.info.label} has no replication connection {name!r}: nothing was changed")
        if not is_stopped(connection):
            raise refused(why_not_stopped(view.info.label, connection) + "; nothing was changed")
        master = next((link.master for link in snapshot.links_of(view.info.id) if link.connection.name == name), None)
        step.detail = {"connection": name, "master": connection.master_address, **stop_reason(connection)}
    async with ctx.step("identify") as step:
        found = await _identify(view, master, connection, count)
        step.detail = found
        if found["waiting"] is not None and found["waiting"] < count:
            raise refused(
                f"{view.info.label}: only {found['waiting']} transaction(s) of {found['source']} wait for connection "
                f"{name!r}, not {count}: the skip counter would pass over the master's next transaction(s) as they "
                "come; nothing was changed"
            )
        refusal = cross_domain_refusal(found, count)
        if refusal is not None:
            raise refused(f"{view.info.label}, connection {name!r}: {refusal}; nothing was changed")
    result = ctx.result
    result.registered_server_id, result.connection, result.count = view.info.id, name, count
    result.stopped_by = StopReason.model_validate(stop_reason(connection))
    result.skipped_gtids, result.skipped_gtids_source = found["skipped_gtids"], found["source"]
    if ctx.dry_run:
        result.data_loss = "would lose: " + data_loss(view.info.label, found["skipped_gtids"], count)
        return
    await ctx.pre_hooks()
    driver = view.require_driver()
    async with ctx.step("skip") as step:
        skipped = await driver.skip_transactions(name, count)
        if skipped.gtids is not None:
            found["skipped_gtids"] = list(skipped.gtids)
            found["source"] = f"{skipped.source or 'the server'} of {view.info.label}"
        gtids = found["skipped_gtids"]
        step.detail = {"gtids": gtids, "pending": skipped.pending}
        if skipped.paused:  # the server's other connections, stopped for the moment of the skip and started again
            step.detail["paused"] = list(skipped.paused)
    result.skipped_gtids, result.skipped_gtids_source = gtids, found["source"]

    async def clear_counter() -> str:
        try:
            await driver.skip_transactions(name, 0)
        except DriverError as e:
            raise OperationFailed(f"{view.info.label}: the skip counter of {name!r} could not be cleared: {e}") from e
        return f"{view.info.label}: the skip counter of {name!r} cleared; nothing was skipped"

    if skipped.pending:  # a counter used at the next start: until then, clearing it undoes the skip
        ctx.undo_with("undo", clear_counter)
    else:
        result.data_loss = data_loss(view.info.label, gtids, count)
    async with ctx.step("start") as step:
        await driver.start_replication(name)
        step.detail = f"started {name!r}"
    ctx.undo_with(None)  # once started, the skip happens: there is nothing to put back
    result.data_loss = data_loss(view.info.label, gtids, count)
    async with ctx.step("verify") as step:
        outcome = await _wait_replicating(driver, name, gtids)
        step.detail = outcome
        result.replicating, result.gtid_slave_pos = outcome["replicating"], outcome["gtid_slave_pos"]
        if not outcome["replicating"]:
            lost = data_loss(view.info.label, gtids, count)
            raise OperationFailed(
                f"{view.info.label}: the skip was done ({lost}) but connection {name!r} does not replicate: "
                f"{outcome['problem']}",
                changed=True,
                left=[lost, f"{view.info.label}: connection {name!r} does not replicate: {outcome['problem']}"],
            )


async def _wait_replicating(driver: ServerDriver, name: str, skipped: list[str]) -> dict[str, Any]:
    """Waits (bounded) until the connection runs, connected, without error, its counter used up and gtid_slave_pos
    past the skipped GTIDs; says what it found either way."""
    deadline = time.monotonic() + RUN_WAIT_S
    want = parse_state(",".join(skipped))
    while True:
        status = await driver.status()
        connection = find_connection(status.connections, name)
        slave = position(status.positions.slave)
        problem = None
        if connection is None:
            problem = f"connection {name!r} disappeared"
        elif connection.last_error is not None:
            e = connection.last_error
            problem = f"it stopped again on {e.side} error {e.code}: {e.message}"
        elif not connection.running or connection.io_state != IoState.connected:
            problem = f"io {connection.io_state.value}, sql {connection.sql_state.value}"
        elif connection.skip_counter:
            problem = f"{connection.skip_counter} transaction(s) still to skip: they have not arrived yet"
        elif any(not slave.is_ahead_of(from_gtids([g])) for g in want):
            problem = f"gtid_slave_pos {status.positions.slave} is not yet past {', '.join(skipped)}"
        done = problem is None or (connection is not None and connection.last_error is not None)
        if done or time.monotonic() >= deadline:
            return {
                "replicating": problem is None,
                "problem": problem if problem is None or done else f"{problem} after {RUN_WAIT_S} s",
                "gtid_slave_pos": status.positions.slave,
                "io_state": None if connection is None else connection.io_state.value,
                "sql_state": None if connection is None else connection.sql_state.value,
            }
        await asyncio.sleep(actions.STATE_POLL_S)
