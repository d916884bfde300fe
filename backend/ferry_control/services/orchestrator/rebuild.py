"""Rebuild: a replica's data replaced with a copy of a donor's, then made to replicate from its source from the
copy's position (`rebuild`).

Steps: `preflight` (rebuild_plan.py: nothing changed when it refuses), `mark` (the recipient fenced with a reason
saying a rebuild is under way: the failover monitor keeps it read-only and never rejoins it by itself), `quiesce` (its
connections stopped, read-only), `copy` (the driver's `rebuild_from`, paced and watched: rebuild_copy.py), `replicate`
(CHANGE MASTER to the source over the connection name and settings it had, else its siblings', MASTER_USE_GTID=
slave_pos at the copy's position), `verify` (it replicates and reached the source's position), `unmark`.

A cancellation (POST …/cancel) or a failure from `mark` on leaves the recipient stopped where the copy began (the
driver's promise) and marked, its fence reason saying the rebuild did not complete, with a typed failure `changed:
true` naming what was left — never half-joined. A reconcile after the API instance died mid-rebuild leaves it so
too, and says so (`repair_rebuild`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.drivers.base import RebuildSource
from ferry_control.drivers.errors import DriverError
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.host_access import DONOR_LAG_PAUSE_S
from ferry_control.schemas.operation import RebuildParams
from ferry_control.schemas.operation_results import Failure, OperationResult, RebuildProgress, RebuildResult
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.failures import OperationFailed, RepairVerdict, refused
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.rebuild_copy import copy
from ferry_control.services.orchestrator.rebuild_mark import REBUILD_MARK
from ferry_control.services.orchestrator.rebuild_plan import RebuildPlan, plan
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot

Rebuild = OperationContext[RebuildParams, RebuildResult]


@dataclass(frozen=True)
class Prepared:
    """What a rebuild's preflight settled: the servers and connection (`RebuildPlan`), the driver's source, and the
    donor lag that pauses the copy."""

    chosen: RebuildPlan
    source: RebuildSource
    lag_pause_s: float


async def run_rebuild(ctx: Rebuild) -> None:
    params, result = ctx.params, ctx.result
    async with ctx.step("preflight") as step:
        prepared = await prepare(ctx, await ctx.snapshot(), params, result)
        step.detail = describe(prepared, params)
    if ctx.dry_run:
        return
    await ctx.pre_hooks()
    await rebuild_steps(ctx, prepared, params, result)


async def prepare(
    ctx: OperationContext[Any, Any], snapshot: ClusterSnapshot, params: RebuildParams, result: RebuildResult
) -> Prepared:
    """The preflight's checks and choices (a refusal, nothing changed, when it cannot go on), recorded in `result`."""
    chosen = plan(snapshot, params, ctx.settings.operations.replication_connection_name)
    recipient, donor = chosen.recipient, chosen.donor
    result.registered_server_id = recipient.info.id
    result.donor_registered_server_id = donor.info.id
    result.source_registered_server_id = chosen.source.info.id
    result.connection = chosen.connection
    driver, donor_driver = recipient.require_driver(), donor.require_driver()
    cluster = await ctx.cluster()
    lag_pause_s = float((cluster.host_access or {}).get("donor_lag_pause_s") or DONOR_LAG_PAUSE_S)
    rebuild_source = RebuildSource(driver=donor_driver)
    if params.resume and not driver.rebuild_resumes:
        raise refused(
            f"{recipient.info.label} cannot resume an interrupted copy: start the rebuild again without resume; "
            "nothing was changed"
        )
    if driver.rebuild_needs_host_access:
        try:
            donor_access = ctx.drivers.host_access(cluster, donor.info.host)
            recipient_access = ctx.drivers.host_access(cluster, recipient.info.host)
        except DriverError as e:
            raise refused(f"the cluster's host access cannot be read: {e.message}; nothing was changed") from e
        if donor_access is None or recipient_access is None:
            raise refused(
                f"{recipient.info.kind.value} servers are rebuilt over SSH: set the cluster's host access first "
                "(PUT …/host-access, an admin's call); nothing was changed"
            )
        rebuild_source = RebuildSource(donor_driver, donor_access, recipient_access)
    result.progress = RebuildProgress(phase="preflight")
    return Prepared(chosen, rebuild_source, lag_pause_s)


def describe(prepared: Prepared, params: RebuildParams) -> str:
    chosen = prepared.chosen
    donor = chosen.donor.info.label
    return (
        f"{chosen.recipient.info.label} will be rebuilt from {donor}"
        + (f" (at most {params.throttle_mb_s:g} MB/s)" if params.throttle_mb_s else "")
        + f", then replicate from {chosen.source.info.label} over {chosen.connection!r} (slave_pos at the copy's "
        f"position); the copy pauses while {donor} trails by more than {prepared.lag_pause_s:g} s"
    )


async def rebuild_steps(
    ctx: OperationContext[Any, Any], prepared: Prepared, params: RebuildParams, result: RebuildResult
) -> None:
    """mark → quiesce → copy → replicate → verify → unmark, recording into `result` (the operation's, or a rejoin's
    `rebuild`)."""
    chosen = prepared.chosen
    recipient, donor, source = chosen.recipient, chosen.donor, chosen.source
    driver = recipient.require_driver()
    label = recipient.info.label
    async with ctx.step("mark") as step:
        await _mark(ctx, recipient.info.id, f"{REBUILD_MARK} being rebuilt from {donor.info.label} by operation "
                    f"{ctx.operation_id}; do not use it until the rebuild ends")  # fmt: skip
        result.marked = True
        step.detail = f"{label} is marked (fenced) while it is rebuilt"
    try:
        async with ctx.step("quiesce") as step:
            for name in chosen.connections:
                await driver.stop_replication(name)
            if not await driver.set_read_only(True):
                raise OperationFailed(f"{label} still reports read_only off")
            stopped = ", ".join(map(repr, chosen.connections)) or "none"
            step.detail = f"{label}: connections stopped ({stopped}), read-only"
        async with ctx.step("copy") as step:
            done = await copy(
                ctx, result, driver, prepared.source, throttle_mb_s=params.throttle_mb_s,
                lag_pause_s=prepared.lag_pause_s, donor_label=donor.info.label, resume=params.resume,
            )  # fmt: skip
            result.position = done.position or ""
            step.detail = f"{done.bytes_done:,} bytes copied from {donor.info.label}; consistent at {result.position!r}"
    except BaseException as e:
        await _left_marked(ctx, result, recipient.info.id, label, e)
        raise
    address = source.info.protocol_address
    assert address is not None
    async with ctx.step("replicate") as step:
        exists = chosen.connection in await actions.connection_names(driver)
        await actions.repoint(driver, chosen.connection, address, "slave_pos", stop_first=exists,
                              settings=chosen.settings)  # fmt: skip
        result.progress = result.progress.model_copy(update={"phase": "replicating"}) if result.progress else None
        step.detail = f"{label} replicates from {source.info.label} ({address}) over {chosen.connection!r}"
    async with ctx.step("verify") as step:
        target = position((await source.require_driver().positions()).binlog)
        lagging: dict[int, str] = {}
        problems = await actions.wait_replicating_from(
            [recipient], address, target, ctx.settings.operations.verify_timeout_s, lagging=lagging
        )
        if problems:
            raise OperationFailed(
                f"{label} does not follow {source.info.label}: {problems[recipient.info.id]}", changed=True,
                left=[f"{label} was rebuilt and replicates from {source.info.label}, not following; it stays marked"],
            )  # fmt: skip
        step.detail = lagging.get(recipient.info.id) or f"{label} reached {target}"
    async with ctx.step("unmark") as step:
        await _unmark(ctx, recipient.info.id)
        result.marked = False
        step.detail = f"{label} is a replica of {source.info.label} again; no longer marked"


async def _mark(ctx: OperationContext[Any, Any], server_id: int, reason: str) -> None:
    async with session_scope(ctx.sessionmaker) as session:
        row = await ServerRepository(session).get(ctx.cluster_id, server_id)
        if row is not None:
            row.fenced, row.fenced_at, row.fence_reason = True, datetime.now(UTC), reason


async def _unmark(ctx: OperationContext[Any, Any], server_id: int) -> None:
    async with session_scope(ctx.sessionmaker) as session:
        row = await ServerRepository(session).get(ctx.cluster_id, server_id)
        if row is not None:
            row.fenced, row.fenced_at, row.fence_reason = False, None, None


async def _left_marked(
    ctx: OperationContext[Any, Any], result: RebuildResult, server_id: int, label: str, error: BaseException
) -> None:
    """After the copy began and did not complete: the recipient stays marked, its reason saying why, and the typed
    failure says what was left (`changed: true`)."""
    cancelled = isinstance(error, asyncio.CancelledError)
    why = ctx.why(error)
    what = "cancelled" if cancelled and ctx.stop_kind == "cancelled" else "stopped before it completed"
    reason = (
        f"{REBUILD_MARK} the rebuild (operation {ctx.operation_id}) was {what} ({why}): its copy is incomplete and its "
        "server is left stopped; rebuild it again"
    )
    try:
        await asyncio.shield(_mark(ctx, server_id, reason))
    except Exception:
        pass
    progress = result.progress
    if progress is None or progress.phase == "preflight":
        # Ended before the copy began (its replication stopping, or the driver's own refusal): its data is as it was.
        left = [f"{label} is left marked (fenced), its replication stopped and read-only; its data was not touched"]
    else:
        left = [
            f"{label} is left stopped (its server not serving, not replicating) and marked (fenced): its copy is "
            f"incomplete ({progress.bytes_done:,} bytes copied)"
        ]
    kind = ctx.stop_kind if cancelled and ctx.stop_kind is not None else (
        "server_error" if isinstance(error, DriverError) else error.kind if isinstance(error, OperationFailed)
        else "internal"
    )  # fmt: skip
    ctx.result.failure = Failure(kind=kind, changed=True, left=left)


async def repair_rebuild(
    ctx: Any, snapshot: ClusterSnapshot, result: OperationResult, done: list[str], problems: list[str]
) -> RepairVerdict:
    """A rebuild whose API instance died: a recipient it marked stays marked (its copy may be incomplete, its server
    stopped or not yet replicating); nothing is moved."""
    assert isinstance(result, RebuildResult)
    if not result.marked or result.registered_server_id is None:
        done.append("it stopped before marking the recipient: nothing was changed")
        return "unchanged"
    label = snapshot.label_of(result.registered_server_id)
    async with session_scope(ctx.sessionmaker) as session:
        row = await ServerRepository(session).get(snapshot.cluster_id, result.registered_server_id)
        if row is not None:
            row.fenced, row.fenced_at = True, row.fenced_at or datetime.now(UTC)
            row.fence_reason = (
                f"{REBUILD_MARK} a rebuild was interrupted (its API instance stopped): its copy may be incomplete; "
                "rebuild it again"
            )
        await ClusterRepository(session).flush()
    problems.append(
        f"{label} is left marked (fenced): the rebuild was interrupted, its copy may be incomplete and its server "
        "stopped — rebuild it again"
    )
    return "unknown"
