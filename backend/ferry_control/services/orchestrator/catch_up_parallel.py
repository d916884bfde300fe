"""Parallel apply raised for a catch-up (a switchover's or a drill's candidate, `catch_up_parallel_workers`) and put
back afterwards, whatever the outcome — and after a crash, by the reconciler.

Two levels:

- `raise_for_catch_up(driver, connection, workers)` → the settings the connection had (a `ParallelApplySettings`),
  and `restore(driver, connection, previous)`: the driver calls alone, both idempotent (a raise to what is in force
  already, or a restore of what is in force, changes nothing). A connection that applies with at least `workers` in
  a parallel mode is left as it is. The raise keeps the connection's mode when it is parallel, else takes the kind's
  `catch_up_mode` (optimistic), and lets one domain use every worker.
- `raise_recorded(ctx, server_id, driver, connection, workers)` and `restore_recorded(ctx, driver, record)`: the
  same inside an operation, with the record a reconcile reads: before the raise, a `ParallelApplyRaise` (server,
  connection, previous and raised settings, `restored: false`) is appended to the operation's
  `result.parallel_apply_raised` and saved (`ctx.save()`, in the database before the server is touched); the restore
  sets `restored: true` and saves again. After a crash, `restore_unrestored` (called by the reconciler for every
  interrupted operation) restores each record still `restored: false`.

A restore whose connection is gone (the candidate was promoted: its connection to the old master removed) puts back
what belongs to the whole server where the kind keeps the workers server-wide (MariaDB's slave_parallel_threads, on
the new master too), and nothing where they went with the connection (ferryd)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ferry_control.drivers.base import ConnectionSettings, ParallelApplyChange, ServerDriver
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.schemas.operation_results import OperationResult, ParallelApplyRaise
from ferry_control.schemas.parallel_apply import ParallelApplySettings
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link

log = logging.getLogger(__name__)


def settings_of(settings: ConnectionSettings | None) -> ParallelApplySettings:
    """The parallel apply part of a connection's settings."""
    if settings is None:
        return ParallelApplySettings()
    return ParallelApplySettings(
        mode=settings.parallel_mode, workers=settings.workers, domain_workers_max=settings.domain_workers_max
    )


async def current(driver: ServerDriver, connection: str) -> ParallelApplySettings:
    """What `connection` applies with now; a DriverError `not_found` when the server has no such connection."""
    found = next((c for c in await driver.replica_connections() if c.name == connection), None)
    if found is None:
        raise DriverError(
            getattr(driver, "address", ""), "connection_not_found", f"no replication connection {connection!r}",
            kind=ErrorKind.not_found,
        )  # fmt: skip
    return settings_of(found.settings)


def raised(driver: ServerDriver, have: ParallelApplySettings, workers: int) -> ParallelApplySettings | None:
    """The settings a catch-up raise to `workers` sets, or None when `have` already applies with as many in a
    parallel mode (or `workers` is 0: off, or the kind cannot change its parallel apply)."""
    limits = driver.parallel_apply_limits
    if workers <= 0 or limits is None:
        return None
    workers = min(max(workers, limits.workers_min), limits.workers_max)
    parallel = have.mode in limits.parallel_modes
    if parallel and (have.workers or 0) >= workers and (have.domain_workers_max in (0, None) or
                                                         have.domain_workers_max >= workers):  # fmt: skip
        return None
    return ParallelApplySettings(
        mode=have.mode if parallel else limits.catch_up_mode,
        workers=max(workers, have.workers or 0),
        domain_workers_max=max(workers, have.workers or 0),
    )


async def raise_for_catch_up(driver: ServerDriver, connection: str, workers: int) -> ParallelApplySettings:
    """Raises `connection`'s parallel apply to `workers` for a catch-up (see the module); returns the settings it
    had, for `restore`. Online: the connection goes on from its position."""
    have = await current(driver, connection)
    wanted = raised(driver, have, workers)
    if wanted is not None:
        await _set(driver, connection, wanted)
    return have


async def restore(driver: ServerDriver, connection: str, previous: ParallelApplySettings) -> ParallelApplyChange | None:
    """Puts back `previous` (fields None: left as they are) on `connection`; where the connection is gone, the
    server-wide part for kinds that keep the workers server-wide (see the module). None when nothing was left to
    put back."""
    try:
        have = await current(driver, connection)
    except DriverError as e:
        if e.kind is not ErrorKind.not_found:
            raise
        limits = driver.parallel_apply_limits
        if limits is None or not limits.server_wide_workers:
            return None
        return await _set(driver, None, previous)
    wanted = ParallelApplySettings(
        mode=previous.mode if previous.mode is not None else have.mode,
        workers=previous.workers if previous.workers is not None else have.workers,
        domain_workers_max=previous.domain_workers_max
        if previous.domain_workers_max is not None
        else have.domain_workers_max,
    )
    if wanted == have:
        return None
    return await _set(driver, connection, wanted)


async def _set(driver: ServerDriver, connection: str | None, wanted: ParallelApplySettings) -> ParallelApplyChange:
    if wanted.mode is None or wanted.workers is None or wanted.domain_workers_max is None:
        raise DriverError(
            getattr(driver, "address", ""), "parallel_apply_unknown",
            f"the server does not report the parallel apply of {connection!r} (mode, workers, per domain): it is "
            "left as it is",
            kind=ErrorKind.unsupported,
        )  # fmt: skip
    return await driver.set_parallel_apply(connection, wanted.mode, wanted.workers, wanted.domain_workers_max)


async def raise_recorded(
    ctx: OperationContext[Any, Any], server_id: int, driver: ServerDriver, connection: str, workers: int
) -> ParallelApplyRaise | None:
    """`raise_for_catch_up` inside an operation, recorded for a reconcile before the server is touched (see the
    module); None when nothing needed raising (nothing recorded)."""
    have = await current(driver, connection)
    wanted = raised(driver, have, workers)
    if wanted is None:
        return None
    record = ParallelApplyRaise(registered_server_id=server_id, connection=connection, previous=have, raised=wanted)
    ctx.result.parallel_apply_raised = [*(ctx.result.parallel_apply_raised or []), record]
    await ctx.save()
    await _set(driver, connection, wanted)
    return record


async def restore_recorded(
    ctx: OperationContext[Any, Any], driver: ServerDriver, record: ParallelApplyRaise
) -> ParallelApplyChange | None:
    """`restore` of a recorded raise, then the record marked restored and saved. Idempotent."""
    if record.restored:
        return None
    change = await restore(driver, record.connection, record.previous)
    record.restored = True
    ctx.changed()
    await ctx.save()
    return change


async def restore_unrestored(snapshot: ClusterSnapshot, result: OperationResult) -> tuple[list[str], list[str]]:
    """For a reconcile: restores every raise `result` recorded and did not restore; (done, problems) in words."""
    done: list[str] = []
    problems: list[str] = []
    for record in result.parallel_apply_raised or []:
        if record.restored:
            continue
        view = snapshot.by_id.get(record.registered_server_id)
        if view is None or not view.reachable:
            why = "no longer registered" if view is None else f"unreachable ({view.error})"
            problems.append(f"server {record.registered_server_id}: its parallel apply raised for catch-up could not "
                            f"be put back to {_words(record.previous)}: {why}")  # fmt: skip
            continue
        try:
            change = await restore(view.require_driver(), record.connection, record.previous)
        except DriverError as e:
            problems.append(f"{view.info.label}: parallel apply of {record.connection!r} not put back: {e}")
            continue
        record.restored = True
        what = "already as it was" if change is None else f"put back to {_words(record.previous)}"
        done.append(f"{view.info.label}: parallel apply of {record.connection!r} raised for catch-up {what}")
    return done, problems


def _words(settings: ParallelApplySettings) -> str:
    return f"{settings.mode} with {settings.workers} worker(s), {settings.domain_workers_max} per domain"


@asynccontextmanager
async def raised_during(ctx: OperationContext[Any, Any], link: Link) -> AsyncIterator[ParallelApplyRaise | None]:
    """With the cluster's `catch_up_parallel_workers`, the `raise_parallel_apply` step raises the candidate's
    (`link.replica`'s) parallel apply on `link`'s connection for what runs inside (recorded first), and the
    `restore_parallel_apply` step puts it back when that ends, whatever the outcome. Inside, a second raise to as many
    workers finds them in force and changes nothing."""
    raised = None
    workers = (await ctx.cluster()).catch_up_parallel_workers or 0
    if workers > 0:
        async with ctx.step("raise_parallel_apply") as step:
            candidate = link.replica
            raised = await raise_recorded(
                ctx, candidate.info.id, candidate.require_driver(), link.connection.name, workers
            )
            step.detail = (
                f"{candidate.info.label} applies with {raised.raised.workers} worker(s) ({raised.raised.mode}) for the "
                f"catch-up; it had {raised.previous.workers} ({raised.previous.mode})"
                if raised is not None
                else f"{candidate.info.label} already applies with {workers} or more workers in a parallel mode"
            )
    try:
        yield raised
    finally:
        if raised is not None:
            await _restore_step(ctx, link.replica, raised)


async def _restore_step(ctx: OperationContext[Any, Any], candidate: Any, raised: ParallelApplyRaise) -> None:
    """Puts back what `raise_parallel_apply` changed. A failure is said in its step and left recorded unrestored
    (a reconcile of this operation puts it back); it never turns the operation's outcome."""
    try:
        async with ctx.step("restore_parallel_apply", fenced=False) as step:
            change = await restore_recorded(ctx, candidate.require_driver(), raised)
            step.detail = (
                f"{candidate.info.label}: parallel apply back to {raised.previous.workers} worker(s) "
                f"({raised.previous.mode})"
                if change is not None
                else f"{candidate.info.label}: nothing left to put back"
            )
    except DriverError:
        log.exception("putting back the candidate's parallel apply failed (recorded unrestored in the result)")
