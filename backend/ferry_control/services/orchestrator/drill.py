"""A drill: prove the master can move, on a real cluster, and keep the evidence. A run of either kind (`switchover`
here; `failover`, failover_drill.py) is carried out by `run_drill`, which records it and says loudly when it fails.

A switchover drill: the preflight of a switchover to the chosen candidate (fixed, or the next eligible replica in
turn) → the candidate catches up under the load until a window would fit the budget (its parallel apply raised for
the whole drill where the cluster's `catch_up_parallel_workers` says so; a drill that cannot fit it ends there having
changed nothing, in numbers) → canary writes in every domain on the master (through its driver) → every server has
them → the live canary writer starts (canary_writer.py: a write per domain every `drill_canary_interval_ms` to
whichever server is the writable master) → pre-hooks → the switchover's moves, the writer still writing →
verification (the writer paused): the canaries are on every server with their content, table checksums are equal at
one position (when the cluster is still enough to have one), no acknowledged GTID is missing and none is duplicated
in any server's recent binlog → optionally the switch back → the writer stops and every canary it was told had
committed is read back on every server (one lost fails the drill, naming it). The run stores RTO (the
write-unavailability window of the switchover), the window the writer saw, its counts per phase, catch-up time,
pass/fail with reasons; a failed run is loud: its webhooks are called and
`ferry_control_drill_runs_total{outcome="failed"}` counts it. A dry run (the failover kind's preview) runs the kind's
preflight only and records no run."""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.drivers.errors import DriverError
from ferry_control.repositories.drills import DrillRepository
from ferry_control.schemas.events import DrillEvent
from ferry_control.schemas.operation_results import CheckResult, SwitchFigures, WebhookCall
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.orchestrator import catch_up_parallel, failover_drill, prepare
from ferry_control.services.orchestrator.canary_writer import CanaryWriter
from ferry_control.services.orchestrator.candidates import delay_of
from ferry_control.services.orchestrator.drill_parts import (
    Drill,
    DrillFailed,
    canaries_replicated,
    canary_key,
    figures,
    next_in_rotation,
    start_writer,
    switch,
    switch_back,
    switch_preflight,
    verify,
    verify_writer,
    with_canaries,
)
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.hooks import call_webhooks
from ferry_control.services.orchestrator.hub_switchover import switch_hub
from ferry_control.services.orchestrator.runner import OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView
from ferry_control.services.orchestrator.switchover import SwitchoverPlan


async def run_drill(ctx: Drill) -> None:
    if ctx.dry_run:
        await _preview(ctx)
        return
    run_id = ctx.params.drill_run_id
    assert run_id is not None, "a drill that is not a dry run carries out a run"
    started = time.perf_counter()
    details: dict[str, Any] = {}
    reasons: list[str] = []
    undone = False
    cause: Exception | None = None
    await _update_run(ctx, run_id, state="running")
    try:
        async with ctx.guarded():  # the switchover's undo happens before the run is ended
            if ctx.params.kind == "failover":
                await failover_drill.run(ctx, run_id, details)
            else:
                await _drill(ctx, run_id, details)
    except DrillFailed as e:
        reasons, cause = e.reasons, e
    except OperationFailed as e:
        reasons, undone, cause = [e.message], e.undone, e
    except DriverError as e:
        reasons, cause = [str(e)], e
    except asyncio.CancelledError:
        outcome = ctx.undo_outcome
        reasons = [outcome.message if outcome is not None else ctx.stop_reason or "cancelled"]
        await asyncio.shield(_end(ctx, run_id, details, reasons, started))
        raise
    await asyncio.shield(_end(ctx, run_id, details, reasons, started))
    if reasons:
        raise _failed("drill failed: " + "; ".join(reasons), undone, cause)


def _failed(message: str, undone: bool, cause: Exception | None) -> OperationFailed:
    """The drill's end as failed, typed from what stopped it: its checks' refusal (nothing changed), a step's
    failure (its kind, and what it left), a server's error. Problems its verifications found once its moves were
    made leave `changed` unknown here: the run's details say what each move did."""
    if isinstance(cause, DrillFailed) and cause.refusal:
        return OperationFailed(message, kind="refused", changed=False)
    if isinstance(cause, OperationFailed):
        return OperationFailed(message, undone=undone, kind=cause.kind, changed=cause.changed, left=cause.left)
    if isinstance(cause, DriverError):
        return OperationFailed(message, kind="server_error")
    return OperationFailed(message, undone=undone)


async def _preview(ctx: Drill) -> None:
    """A dry run: the kind's preflight, nothing changed; refused, it fails saying why."""
    try:
        if ctx.params.kind == "failover":
            await failover_drill.preflight(ctx)
            return
        async with ctx.step("preflight") as step:
            plan, _ = await switch_preflight(ctx, await _choose(ctx, await ctx.snapshot()))
            step.detail = {"checks": [asdict(c) for c in plan.checks]}
            ctx.result.checks = [CheckResult.of(c) for c in plan.checks]
            if not plan.passed:
                raise DrillFailed([f"preflight {c.name}: {c.detail}" for c in plan.failed()])
    except DrillFailed as e:
        raise refused(f"the {ctx.params.kind} drill would be refused: " + "; ".join(e.reasons)) from e


async def _end(ctx: Drill, run_id: int, details: dict[str, Any], reasons: list[str], started: float) -> None:
    details["duration_s"] = round(time.perf_counter() - started, 6)
    passed = not reasons
    if ctx.params.kind == "failover":
        failover = ctx.result.failover
        if failover is not None:
            details["failover"] = failover.model_dump(mode="json")
        figures_ = {
            "rto_s": None if failover is None else failover.rto_s,
            "rpo_lost": None if failover is None else failover.rpo_lost,
            "catch_up_s": None if failover is None else failover.catch_up_s,
        }
    else:
        switchover = ctx.result.switchover or SwitchFigures()
        figures_ = {"rto_s": switchover.unavailable_s, "catch_up_s": switchover.catch_up_s}
    run = await _update_run(
        ctx, run_id, state="passed" if passed else "failed", passed=passed, reasons=reasons, details=details,
        finished_at=datetime.now(UTC), **figures_,
    )  # fmt: skip
    ctx.runner.metrics.drill_runs.labels("passed" if passed else "failed").inc()
    if passed or run is None:
        return
    urls = [
        *ctx.settings.webhooks.drill_failure,
        *([ctx.params.webhook_url] if ctx.params.webhook_url else []),
    ]
    if urls:
        payload = {"event": "drill_failed", "drill_run_id": run_id, "cluster_id": ctx.cluster_id,
                   "operation_id": ctx.operation_id, "reasons": reasons, "details": details}  # fmt: skip
        outcomes = await call_webhooks(urls, payload, ctx.settings)
        ctx.result.drill_webhooks = [WebhookCall.model_validate(o.as_dict()) for o in outcomes]


async def _update_run(ctx: Drill, run_id: int, **fields: Any) -> Any:
    """Updates the run's row; a state change is then published on the event stream as a `drill` event."""
    async with session_scope(ctx.sessionmaker) as session:
        run = await DrillRepository(session).run_fresh(run_id)
        if run is None:
            return None
        for key, value in fields.items():
            setattr(run, key, value)
    if "state" in fields:
        data = DrillEvent(drill_run_id=run_id, operation_id=ctx.operation_id, state=fields["state"])
        ctx.runner.bus.publish(ClusterEvent.of(ctx.cluster_id, data))
    return run


async def _choose(ctx: Drill, snapshot: ClusterSnapshot) -> int | None:
    """The candidate: the fixed one, or the replica after the last drill's candidate (by id, wrapping) — never a
    delayed one (kept for disaster recovery, it is never promoted automatically; a fixed plan may name it)."""
    if ctx.params.candidate_strategy == "fixed":
        return ctx.params.candidate_registered_server_id
    master, _ = snapshot.source(ctx.params.source_registered_server_id)
    if master is None:
        return None
    replicas = sorted(
        link.replica.info.id for link in snapshot.replicas_of(master.info.id)
        if link.replicating and not link.replica.info.maintenance and not link.replica.info.fenced
        and not delay_of(link)
    )  # fmt: skip
    if not replicas:
        return None
    async with session_scope(ctx.sessionmaker) as session:
        last = await DrillRepository(session).last_candidate(ctx.cluster_id)
    return next_in_rotation(replicas, last)


async def _drill(ctx: Drill, run_id: int, details: dict[str, Any]) -> None:
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        plan, snapshot = await switch_preflight(ctx, await _choose(ctx, snapshot))
        step.detail = {"checks": [asdict(c) for c in plan.checks]}
        ctx.result.checks = [CheckResult.of(c) for c in plan.checks]
        if not plan.passed:
            raise DrillFailed([f"preflight {c.name}: {c.detail}" for c in plan.failed()], refusal=True)
    assert plan.master is not None and plan.candidate is not None
    master, candidate = plan.master, plan.candidate.replica
    details.update(old_master_registered_server_id=master.info.id, candidate_registered_server_id=candidate.info.id)
    if snapshot.links_of(master.info.id):  # an intermediate master: its own drill
        await _hub_drill(ctx, run_id, details, snapshot, plan)
        return
    if len(snapshot.roots()) > 1:
        raise DrillFailed([
            f"{master.info.label} is one master of several: its drill is not supported yet (the live canary writer "
            "follows one writable master); drill an intermediate master, or run a switchover"
        ], refusal=True)  # fmt: skip
    servers = [master, plan.candidate.replica, *(o.replica for o in plan.others)]

    # Before anything is written: the candidate catches up under the load (its parallel apply raised where the
    # cluster says so, for the whole drill) until a window would fit the budget; a drill that cannot fit it ends
    # here, having changed nothing, with the rates and the predicted window.
    async with catch_up_parallel.raised_during(ctx, plan.candidate):
        max_window_s, timeout_s = prepare.budget(ctx, None, None, (await ctx.cluster()).max_window_s)
        await prepare.catch_up_before_window(
            ctx, master, candidate, max_window_s=max_window_s, timeout_s=timeout_s, delay_s=delay_of(plan.candidate)
        )
        await with_canaries(
            ctx, run_id, details, master, servers,
            lambda writer, canaries: _live_drill(ctx, run_id, details, writer, master, candidate, servers, canaries),
        )  # fmt: skip


async def _live_drill(
    ctx: Drill,
    run_id: int,
    details: dict[str, Any],
    writer: CanaryWriter,
    master: ServerView,
    candidate: ServerView,
    servers: list[ServerView],
    canaries: dict[int, str],
) -> None:
    """The switch (and back) with the live canary writer running, and the verifications."""
    await start_writer(ctx, writer)
    # The switchover itself, from a fresh preflight (the canaries moved the positions).
    plan, _ = await switch_preflight(ctx, candidate.info.id, master.info.id)
    if not plan.passed:
        raise DrillFailed([f"preflight {c.name}: {c.detail}" for c in plan.failed()])
    assert plan.master is not None and plan.candidate is not None
    writer_reasons = await switch(ctx, writer, "switch", plan.master, plan.candidate, plan.others, announce=True)
    ctx.result.switchover = figures(ctx.result)
    details["switchover"] = ctx.result.switchover.model_dump(mode="json")

    await writer.pause()  # the checksums need the servers at one position
    try:
        reasons = writer_reasons + await verify(ctx, servers, canaries, run_id, details)
    finally:
        writer.resume()
    if ctx.params.switch_back:
        reasons += await switch_back(ctx, writer, master, candidate, details)
    reasons += await verify_writer(ctx, writer, details)
    if reasons:
        raise DrillFailed(reasons)


async def _hub_drill(
    ctx: Drill, run_id: int, details: dict[str, Any], snapshot: ClusterSnapshot, plan: SwitchoverPlan
) -> None:
    """The drill of an intermediate master: canaries written on each of its masters in the domains that master
    originates, the hub's role moved to the candidate (`hub_switchover`: the masters never stop taking writes)
    and, with `switch_back`, back; each time the canaries are verified on every server below the masters (rows,
    checksums at one position where the cluster stands still, each canary GTID once in every binlog), and each
    moved server's replication gap kept."""
    assert plan.master is not None and plan.candidate is not None
    hub, link = plan.master, plan.candidate
    masters = [incoming.master for incoming in snapshot.links_of(hub.info.id)]
    below = [hub, link.replica, *(o.replica for o in plan.others)]
    async with ctx.step("write_canaries") as step:
        canaries: dict[int, str] = {}
        for master in masters:
            if master.status is None:
                raise DrillFailed([f"{master.info.label}, a master of {hub.info.label}, does not answer"])
            own = [g.domain for g in master.binlog if g.server == master.status.server_id] or [
                master.status.default_domain
            ]
            for domain in own:
                canaries[domain] = await master.require_driver().write_canary(
                    domain, canary_key(run_id, domain), {"run": run_id, "domain": domain, "operation": ctx.operation_id}
                )
        details["canaries"] = {str(d): g for d, g in canaries.items()}
        step.detail = details["canaries"]
    canary_position = str(position(",".join(canaries.values())))
    await canaries_replicated(ctx, below, canary_position)
    await ctx.pre_hooks(
        old_master_registered_server_id=hub.info.id, new_master_registered_server_id=link.replica.info.id
    )
    await switch_hub(ctx, snapshot, hub, link, plan.others)
    moved = ctx.result.switchover = SwitchFigures(catch_up_s=ctx.result.catch_up_s, position=ctx.result.position)
    details["switchover"] = {**moved.model_dump(mode="json"), "replication_gaps_s": ctx.result.replication_gaps_s}
    reasons = await verify(ctx, below, canaries, run_id, details)
    if ctx.params.switch_back and not reasons:
        async with ctx.step("switch_back_preflight") as step:
            back, snapshot = await switch_preflight(ctx, hub.info.id, link.replica.info.id)
            step.detail = {"checks": [asdict(c) for c in back.checks]}
            if not back.passed:
                raise DrillFailed([f"switch back: {c.name}: {c.detail}" for c in back.failed()])
        assert back.master is not None and back.candidate is not None
        await switch_hub(ctx, snapshot, back.master, back.candidate, back.others)
        details["switch_back"] = {"catch_up_s": ctx.result.catch_up_s,
                                  "replication_gaps_s": ctx.result.replication_gaps_s}  # fmt: skip
        reasons += await verify(ctx, below, canaries, run_id, details)
    if reasons:
        raise DrillFailed(reasons)
