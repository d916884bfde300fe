"""Change a replica connection's parallel apply online, as an operation (`parallel_apply`): the cluster's lock,
the audit, a dry run and the steps come with it, like any other change to a server.

Steps: `preflight` (the connection exists, the wanted settings — what the request leaves out stays as it is — are
within what the server's kind accepts, the connection does not run with an UNTIL a restart would lose), `change`
(the driver's `set_parallel_apply`: the connection's applying side stops at a transaction boundary and starts again
at its position, or takes the change between two commit groups; the result names what was paused), `verify`
(bounded: a connection that applied before applies again, without error, and its gtid_slave_pos did not go back).
A change that fails after touching the server is put back to the settings it had (the guard's undo)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ferry_control.drivers.base import ParallelApplyLimits, ReplicaConnection, ServerDriver, SqlState
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation import ParallelApplyParams
from ferry_control.schemas.operation_results import ParallelApplyResult
from ferry_control.schemas.parallel_apply import ParallelApplySettings
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.catch_up_parallel import restore, settings_of
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.simple import _connection, _reachable

#: How long the connection may take to apply again after the change before the operation says it does not.
APPLY_WAIT_S = 10.0
#: SQL sides that apply (or hold what they received to apply it).
APPLYING = frozenset({SqlState.applying, SqlState.waiting_for_relay, SqlState.delaying})


def wanted_settings(params: ParallelApplyParams, have: ParallelApplySettings) -> ParallelApplySettings:
    """The settings asked for: what the request gives, else what the connection has."""
    return ParallelApplySettings(
        mode=params.mode if params.mode is not None else have.mode,
        workers=params.workers if params.workers is not None else have.workers,
        domain_workers_max=params.domain_workers_max if params.domain_workers_max is not None
        else have.domain_workers_max,
    )  # fmt: skip


def refusal(limits: ParallelApplyLimits | None, kind: str, wanted: ParallelApplySettings) -> str | None:
    """Why the wanted settings cannot be set on a server of `kind`, in words; None when they can."""
    if limits is None:
        return f"{kind} servers cannot change their parallel apply"
    if wanted.mode is None or wanted.workers is None or wanted.domain_workers_max is None:
        return "the server does not report its connection's parallel apply: give mode, workers and domain_workers_max"
    return limits.refusal(wanted.mode, wanted.workers, wanted.domain_workers_max)


def find(connections: tuple[ReplicaConnection, ...], name: str) -> ReplicaConnection | None:
    return next((c for c in connections if c.name == name), None)


async def run_parallel_apply(ctx: OperationContext[ParallelApplyParams, ParallelApplyResult]) -> None:
    result = ctx.result
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        view = _reachable(snapshot, ctx.params.registered_server_id, "the replica")
        assert view.status is not None
        name = _connection(view, ctx.params.connection, ctx.settings.operations.replication_connection_name)
        connection = find(view.status.connections, name)
        if connection is None:
            raise refused(f"{view.info.label} has no replication connection {name!r}: nothing was changed")
        driver = view.require_driver()
        have = settings_of(connection.settings)
        wanted = wanted_settings(ctx.params, have)
        why = refusal(driver.parallel_apply_limits, view.info.kind.value, wanted)
        if why is not None:
            raise refused(f"{view.info.label}: {why}; nothing was changed")
        if connection.until is not None:
            raise refused(
                f"{view.info.label}: connection {name!r} runs UNTIL {connection.until}: changing its parallel apply "
                "would start it again without it; nothing was changed"
            )
        applying = connection.sql_state in APPLYING
        step.detail = {"connection": name, "before": have.model_dump(), "wanted": wanted.model_dump(),
                       "sql_state": connection.sql_state.value}  # fmt: skip
    result.registered_server_id, result.connection, result.before = view.info.id, name, have
    if ctx.dry_run:
        result.after = wanted
        return
    await ctx.pre_hooks()
    slave_before = view.status.positions.slave
    result.gtid_slave_pos_before = slave_before

    async def put_back() -> str:
        try:
            await restore(driver, name, have)
        except DriverError as e:
            raise OperationFailed(
                f"{view.info.label}: the parallel apply of {name!r} could not be put back: {e}"
            ) from e
        return f"{view.info.label}: the parallel apply of {name!r} is as it was"

    async with ctx.guarded():
        ctx.undo_with("undo", put_back)
        async with ctx.step("change") as step:
            assert wanted.mode is not None and wanted.workers is not None and wanted.domain_workers_max is not None
            change = await driver.set_parallel_apply(name, wanted.mode, wanted.workers, wanted.domain_workers_max)
            result.after, result.paused = settings_of(change.after), list(change.paused)
            step.detail = {"after": result.after.model_dump(), "paused": list(change.paused)}
            if change.before == change.after:
                step.detail["unchanged"] = "the settings were in force already"
        async with ctx.step("verify") as step:
            outcome = await _wait_applying(driver, name, slave_before, applying)
            step.detail = outcome
            result.gtid_slave_pos_after = outcome["gtid_slave_pos"]
            if outcome["problem"] is not None:
                raise OperationFailed(f"{view.info.label}: connection {name!r} after the change: {outcome['problem']}")
        ctx.undo_with(None)


async def _wait_applying(driver: ServerDriver, name: str, slave_before: str, applied_before: bool) -> dict[str, Any]:
    """Waits (bounded) until the connection applies again when it did before (without error either way), and checks
    that its gtid_slave_pos did not go back; says what it found."""
    deadline = time.monotonic() + APPLY_WAIT_S
    before = position(slave_before)
    while True:
        status = await driver.status()
        connection = find(status.connections, name)
        slave = position(status.positions.slave)
        problem = None
        if connection is None:
            problem = "it disappeared"
        elif connection.last_error is not None:
            e = connection.last_error
            problem = f"it stopped on {e.side} error {e.code}: {e.message}"
        elif not slave.is_ahead_of(before):
            problem = f"gtid_slave_pos went back from {slave_before} to {status.positions.slave}"
        elif applied_before and connection.sql_state not in APPLYING:
            problem = f"its applying side is {connection.sql_state.value}"
        failed = connection is None or (connection is not None and connection.last_error is not None)
        if problem is None or failed or time.monotonic() >= deadline:
            return {
                "problem": problem if problem is None or failed else f"{problem} after {APPLY_WAIT_S} s",
                "gtid_slave_pos": status.positions.slave,
                "sql_state": None if connection is None else connection.sql_state.value,
            }
        await asyncio.sleep(actions.STATE_POLL_S)
