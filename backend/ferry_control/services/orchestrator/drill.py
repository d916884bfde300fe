"""A drill: prove the master can move, on a real cluster, and keep the evidence.

Steps: the preflight of a switchover to the chosen candidate (fixed, or the next eligible replica in turn) → canary
writes in every domain on the master (through its driver) → every server has them → the live canary writer starts
(canary_writer.py: a write per domain every `drill_canary_interval_ms` to whichever server is the writable master)
→ pre-hooks → the switchover's moves, the writer still writing → verification (the writer paused): the canaries are
on every server with their content, table checksums are equal at one position (when the cluster is still enough to
have one), no acknowledged GTID is missing and none is duplicated in any server's recent binlog → optionally the
switch back → the writer stops and every canary it was told had committed is read back on every server (one lost
fails the drill, naming it). The run stores RTO (the write-unavailability window of the switchover), the window the
writer saw, its counts per phase, catch-up time, pass/fail with reasons; a failed run is loud: its webhooks are
called and `ferry_control_drill_runs_total{outcome="failed"}` counts it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.core.naming import unknown_server
from ferry_control.drivers.errors import DriverError
from ferry_control.repositories.drills import DrillRepository
from ferry_control.schemas.events import DrillEvent
from ferry_control.schemas.operation import DrillParams, SwitchoverParams
from ferry_control.schemas.operation_results import CheckResult, DrillResult, SwitchFigures, WebhookCall
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.canary_writer import (
    CanaryWriter,
    WriterServer,
    ledger_record,
    report,
    verify_ledger,
)
from ferry_control.services.orchestrator.candidates import delay_of
from ferry_control.services.orchestrator.gtid import join_all, position
from ferry_control.services.orchestrator.hooks import call_webhooks
from ferry_control.services.orchestrator.hub_switchover import switch_hub
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView
from ferry_control.services.orchestrator.switchover import (
    SwitchoverPlan,
    add_server_checks,
    plan_switchover,
    switch_master,
)

#: Attempts at reading equal positions for the checksum comparison (each after waiting for convergence).
CHECKSUM_ATTEMPTS = 5


#: A drill's operation as its steps see it.
Drill = OperationContext[DrillParams, DrillResult]


def _figures(result: DrillResult) -> SwitchFigures:
    """The last switch's figures."""
    return SwitchFigures(
        unavailable_s=result.unavailable_s, catch_up_s=result.catch_up_s, position=result.position,
        catch_up_phase=result.catch_up_phase, window_steps=result.window_steps,
    )  # fmt: skip


class DrillFailed(Exception):
    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


async def run_drill(ctx: Drill) -> None:
    run_id = ctx.params.drill_run_id
    started = time.perf_counter()
    details: dict[str, Any] = {}
    reasons: list[str] = []
    undone = False
    await _update_run(ctx, run_id, state="running")
    try:
        async with ctx.guarded():  # the switchover's undo happens before the run is ended
            await _drill(ctx, run_id, details)
    except DrillFailed as e:
        reasons = e.reasons
    except OperationFailed as e:
        reasons, undone = [e.message], e.undone
    except DriverError as e:
        reasons = [str(e)]
    except asyncio.CancelledError:
        outcome = ctx.undo_outcome
        reasons = [outcome.message if outcome is not None else ctx.stop_reason or "cancelled"]
        await asyncio.shield(_end(ctx, run_id, details, reasons, started))
        raise
    await asyncio.shield(_end(ctx, run_id, details, reasons, started))
    if reasons:
        raise OperationFailed("drill failed: " + "; ".join(reasons), undone=undone)


async def _end(ctx: Drill, run_id: int, details: dict[str, Any], reasons: list[str], started: float) -> None:
    details["duration_s"] = round(time.perf_counter() - started, 6)
    passed = not reasons
    switchover = ctx.result.switchover or SwitchFigures()
    run = await _update_run(
        ctx, run_id, state="passed" if passed else "failed", passed=passed, reasons=reasons,
        rto_s=switchover.unavailable_s, catch_up_s=switchover.catch_up_s, details=details,
        finished_at=datetime.now(UTC),
    )  # fmt: skip
    ctx.runner.metrics.drill_runs.labels("passed" if passed else "failed").inc()
    if passed or run is None:
        return
    urls = [
        *ctx.settings.drill_failure_webhooks,
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
        return ctx.params.candidate_server_id
    master, _ = snapshot.source(ctx.params.source_server_id)
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


def next_in_rotation(eligible: Sequence[int], last: int | None) -> int:
    """A rotation's next candidate among `eligible` (sorted ids, not empty): the first after the last drill's
    candidate, wrapping to the first."""
    after = [r for r in eligible if last is not None and r > last]
    return (after or eligible)[0]


async def _preflight(
    ctx: Drill, candidate_id: int | None, source_id: int | None = None
) -> tuple[SwitchoverPlan, ClusterSnapshot]:
    snapshot = await ctx.snapshot()
    source_id = source_id if source_id is not None else ctx.params.source_server_id
    master, _ = snapshot.source(source_id, candidate_id)
    if master is not None:
        await snapshot.refresh(master.info.id, ctx.settings.poll_timeout_s)
    if candidate_id is None:
        candidate_id = await _choose(ctx, snapshot)
    plan = plan_switchover(
        snapshot, SwitchoverParams(candidate_server_id=candidate_id, source_server_id=source_id), ctx.settings
    )
    await add_server_checks(plan)
    return plan, snapshot


async def _drill(ctx: Drill, run_id: int, details: dict[str, Any]) -> None:
    settings = ctx.settings
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        plan, snapshot = await _preflight(ctx, await _choose(ctx, snapshot))
        step.detail = {"checks": [asdict(c) for c in plan.checks]}
        ctx.result.checks = [CheckResult.of(c) for c in plan.checks]
        if not plan.passed:
            raise DrillFailed([f"preflight {c.name}: {c.detail}" for c in plan.failed()])
    assert plan.master is not None and plan.candidate is not None
    master, candidate = plan.master, plan.candidate.replica
    details.update(old_master_server_id=master.info.id, candidate_server_id=candidate.info.id)
    if snapshot.links_of(master.info.id):  # an intermediate master: its own drill
        await _hub_drill(ctx, run_id, details, snapshot, plan)
        return
    if len(snapshot.roots()) > 1:
        raise DrillFailed([
            f"{master.info.label} is one master of several: its drill is not supported yet (the live canary writer "
            "follows one writable master); drill an intermediate master, or run a switchover"
        ])  # fmt: skip
    servers = [master, plan.candidate.replica, *(o.replica for o in plan.others)]

    async with ctx.step("write_canaries") as step:
        canaries = await _write_canaries(ctx, master, run_id)
        details["canaries"] = {str(d): g for d, g in canaries.items()}
        step.detail = details["canaries"]
    canary_position = str(position(",".join(canaries.values())))
    await _canaries_replicated(ctx, servers[1:], canary_position)

    writer = CanaryWriter(
        [WriterServer(v.info.id, v.info.label, v.require_driver()) for v in servers], sorted(canaries),
        run_id=run_id, operation_id=ctx.operation_id, interval_s=settings.drill_canary_interval_ms / 1000,
        per_domain_max=settings.drill_canaries_per_domain_max,
    )  # fmt: skip
    try:
        await _live_drill(ctx, run_id, details, writer, master, candidate, servers, canaries)
    finally:
        await writer.stop()
        details.setdefault("canary_writer", report(writer, None))


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
    settings = ctx.settings
    async with ctx.step("canary_writer_start") as step:
        writer.start()
        await asyncio.sleep(settings.drill_canary_lead_s)
        missing = await writer.wait_acknowledged(0.0, settings.drill_canary_verify_timeout_s)
        step.detail = {"interval_ms": settings.drill_canary_interval_ms, "phases": writer.ledger.counts()}
        if missing:
            raise DrillFailed([f"the live canary writer got no write acknowledged in domains {missing} before the "
                               f"switch: {_refusals(writer)}"])  # fmt: skip

    # The switchover itself, from a fresh preflight (the canaries moved the positions).
    plan, _ = await _preflight(ctx, candidate.info.id, master.info.id)
    if not plan.passed:
        raise DrillFailed([f"preflight {c.name}: {c.detail}" for c in plan.failed()])
    assert plan.master is not None and plan.candidate is not None
    writer_reasons = await _switch(ctx, writer, "switch", plan.master, plan.candidate, plan.others, announce=True)
    ctx.result.switchover = _figures(ctx.result)
    details["switchover"] = ctx.result.switchover.model_dump(mode="json")

    await writer.pause()  # the checksums need the servers at one position
    try:
        reasons = writer_reasons + await _verify(ctx, servers, canaries, run_id, details)
    finally:
        writer.resume()
    if ctx.params.switch_back:
        try:
            async with ctx.step("switch_back_preflight") as step:
                back, _ = await _preflight(ctx, master.info.id, candidate.info.id)
                step.detail = {"checks": [asdict(c) for c in back.checks]}
                if not back.passed:
                    raise DrillFailed([f"switch back: {c.name}: {c.detail}" for c in back.failed()])
        except DrillFailed as e:  # not switched back; the canaries written so far are still verified
            reasons += e.reasons
        else:
            assert back.master is not None and back.candidate is not None
            reasons += await _switch(ctx, writer, "switch_back", back.master, back.candidate, back.others)
            details["switch_back"] = _figures(ctx.result).model_dump(mode="json")
    reasons += await _verify_writer(ctx, writer, servers, details)
    if reasons:
        raise DrillFailed(reasons)


async def _switch(
    ctx: Drill,
    writer: CanaryWriter,
    name: str,
    master: ServerView,
    link: Link,
    others: list[Link],
    *,
    announce: bool = False,
) -> list[str]:
    """The switchover's moves with the writer told when they run; then the writer writes on for the lead time and
    until each domain has a write acknowledged by the new master (bounded). Returns the reasons to fail (a domain
    whose writes the new master never acknowledged); the drill goes on to verify what was acknowledged."""
    mark = writer.switch_started(name, master.info.id, link.replica.info.id)
    succeeded = False
    try:
        await switch_master(ctx, master, link, others, announce=announce)
        succeeded = True
    finally:
        writer.switch_ended(mark, succeeded)
    async with ctx.step(f"canary_writer_after_{name}") as step:
        await asyncio.sleep(ctx.settings.drill_canary_lead_s)
        missing = await writer.wait_acknowledged(
            mark.started_s, ctx.settings.drill_canary_verify_timeout_s, server_id=link.replica.info.id
        )
        step.detail = {"phases": writer.ledger.counts(), "window": writer.ledger.window(mark)}
        if missing and writer.ledger.capped:
            step.detail["note"] = f"the writer reached its bound ({writer.per_domain_max} writes per domain)"
        elif missing:
            step.detail["missing_domains"] = missing
            return [f"the live canary writer got no write acknowledged by the new master {link.replica.info.label} "
                    f"in domains {missing}: {_refusals(writer)}"]  # fmt: skip
    return []


def _refusals(writer: CanaryWriter) -> str:
    """The last few refused or unknown writes, for a reason."""
    failed = [a for a in writer.ledger.attempts if a.outcome != "acknowledged"][-3:]
    return "; ".join(f"{a.key} {a.outcome} ({a.error}) by {_sent_to(a.server_id)}" for a in failed) or "no answer"


async def _verify_writer(
    ctx: Drill, writer: CanaryWriter, servers: list[ServerView], details: dict[str, Any]
) -> list[str]:
    """Stops the live writer and reads every canary it was told had committed back on every server."""
    async with ctx.step("verify_live_canaries") as step:
        await writer.stop()
        acknowledged = writer.ledger.acknowledged()
        verification = await verify_ledger(writer.servers, acknowledged, ctx.settings.drill_canary_verify_timeout_s)
        details["canary_writer"] = report(writer, verification)
        step.detail = {**details["canary_writer"], "ledger": ledger_record(acknowledged)}
    return verification.reasons()


async def _write_canaries(ctx: Drill, master: ServerView, run_id: int) -> dict[int, str]:
    """One canary row per domain the master has (and its default domain), each its own transaction, written
    through the master's driver."""
    assert master.status is not None
    domains = sorted({*position(master.status.positions.binlog).domains(), master.status.default_domain})
    driver = master.require_driver()
    canaries = {}
    for domain in domains:
        canaries[domain] = await driver.write_canary(
            domain, canary_key(run_id, domain), {"run": run_id, "domain": domain, "operation": ctx.operation_id}
        )
    return canaries


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
    await _canaries_replicated(ctx, below, canary_position)
    await ctx.pre_hooks(old_master_server_id=hub.info.id, new_master_server_id=link.replica.info.id)
    await switch_hub(ctx, snapshot, hub, link, plan.others)
    figures = ctx.result.switchover = SwitchFigures(catch_up_s=ctx.result.catch_up_s, position=ctx.result.position)
    details["switchover"] = {**figures.model_dump(mode="json"), "replication_gaps_s": ctx.result.replication_gaps_s}
    reasons = await _verify(ctx, below, canaries, run_id, details)
    if ctx.params.switch_back and not reasons:
        async with ctx.step("switch_back_preflight") as step:
            back, snapshot = await _preflight(ctx, hub.info.id, link.replica.info.id)
            step.detail = {"checks": [asdict(c) for c in back.checks]}
            if not back.passed:
                raise DrillFailed([f"switch back: {c.name}: {c.detail}" for c in back.failed()])
        assert back.master is not None and back.candidate is not None
        await switch_hub(ctx, snapshot, back.master, back.candidate, back.others)
        details["switch_back"] = {"catch_up_s": ctx.result.catch_up_s,
                                  "replication_gaps_s": ctx.result.replication_gaps_s}  # fmt: skip
        reasons += await _verify(ctx, below, canaries, run_id, details)
    if reasons:
        raise DrillFailed(reasons)


async def _canaries_replicated(ctx: Drill, servers: list[ServerView], canary_position: str) -> None:
    """The `canaries_replicated` step: each server reaches the canaries' position (bounded; a server with one
    connection gives up as soon as it breaks), else the drill fails naming each server that did not."""
    async with ctx.step("canaries_replicated") as step:
        problems = []
        for view in servers:
            names = [c.name for c in view.status.connections] if view.status else []
            reached = await actions.wait_reached(
                view.require_driver(), canary_position, ctx.settings.switchover_catch_up_timeout_s,
                connection=names[0] if len(names) == 1 else None,
            )  # fmt: skip
            if not reached.reached:
                problems.append(
                    f"{view.info.label} did not receive the canaries ({canary_position}; it is at {reached.position})"
                    + (f": {reached.broken}" if reached.broken else "")
                )
        step.detail = {"position": canary_position, "problems": problems}
        if problems:
            raise DrillFailed(problems)


def canary_key(run_id: int, domain: int) -> str:
    return f"run{run_id}_d{domain}"


async def _verify(
    ctx: Drill,
    servers: list[ServerView],
    canaries: dict[int, str],
    run_id: int,
    details: dict[str, Any],
) -> list[str]:
    reasons: list[str] = []
    async with ctx.step("verify_canaries") as step:
        missing = []
        for view in servers:
            rows = await view.require_driver().read_canaries([canary_key(run_id, d) for d in canaries])
            for domain in canaries:
                row = rows.get(canary_key(run_id, domain))
                if row is None or row.get("run") != run_id or row.get("domain") != domain:
                    missing.append(f"{view.info.label}: canary of domain {domain} is {row}")
        step.detail = {"servers": len(servers), "domains": sorted(canaries), "missing": missing}
        reasons += missing
    async with ctx.step("verify_checksums") as step:
        outcome = await _compare_checksums(servers, ctx.settings.drill_checksum_wait_s)
        step.detail = outcome
        if outcome.get("problem"):
            reasons.append(outcome["problem"])
    async with ctx.step("verify_gtids") as step:
        found = await _gtid_problems(ctx, servers, canaries)
        step.detail = found or "every canary GTID once on every server; no duplicated GTID in the recent binlogs"
        reasons += found
    details["verified"] = not reasons
    return reasons


async def _compare_checksums(servers: list[ServerView], wait_s: float) -> dict[str, Any]:
    """Table checksums of every server at one position: read on each, and where the positions differ, each server
    waits to reach the most advanced and they are read again (`CHECKSUM_ATTEMPTS` times). A cluster that kept
    taking writes throughout (its most advanced position moved at every attempt: client load) never stands at one
    position: the comparison is then not made (`compared` false, said why), and the canaries and GTIDs carry the
    proof; one that stood still at different positions is a problem."""
    moved = 0
    last_target = None
    for attempt in range(1, CHECKSUM_ATTEMPTS + 1):
        sums = [await view.require_driver().checksums() for view in servers]
        positions = {s.position for s in sums}
        if len(positions) == 1:
            tables = {view.info.label: dict(s.tables) for view, s in zip(servers, sums, strict=True)}
            first = next(iter(tables.values()))
            differing = [label for label, t in tables.items() if t != first]
            problem = f"table checksums differ at {positions.pop()} on {', '.join(differing)}" if differing else None
            return {"attempts": attempt, "position": sums[0].position, "tables": len(first), "problem": problem,
                    "compared": True}  # fmt: skip
        target = join_all(position(p) for p in positions)
        if last_target is not None and target != last_target:
            moved += 1
        last_target = target
        deadline = time.monotonic() + wait_s  # one bound for all the servers' waits of an attempt
        for view in servers:
            await actions.wait_reached(view.require_driver(), str(target), max(0.0, deadline - time.monotonic()))
    if moved == CHECKSUM_ATTEMPTS - 1:
        return {"attempts": CHECKSUM_ATTEMPTS, "compared": False, "problem": None,
                "note": f"not compared: the cluster kept taking writes over {CHECKSUM_ATTEMPTS} attempts (the "
                        "servers never stood at one position)"}  # fmt: skip
    return {"problem": f"checksums not comparable: positions kept moving over {CHECKSUM_ATTEMPTS} attempts",
            "compared": False}  # fmt: skip


async def _gtid_problems(ctx: Drill, servers: list[ServerView], canaries: dict[int, str]) -> list[str]:
    problems = []
    wanted = set(canaries.values())
    for view in servers:
        seen: dict[str, int] = {}
        before = None
        scanned = 0
        while scanned < ctx.settings.drill_events_scan_max:
            page = await view.require_driver().recent_events(min(1000, ctx.settings.drill_events_scan_max - scanned),
                                                             before=before)  # fmt: skip
            for transaction in page.transactions:
                seen[transaction.gtid] = seen.get(transaction.gtid, 0) + 1
            scanned += len(page.transactions)
            if page.next_before is None or not page.transactions:
                break
            before = page.next_before
        duplicated = sorted(g for g, n in seen.items() if n > 1)
        if duplicated:
            problems.append(f"{view.info.label}: GTIDs duplicated in its binlog: {', '.join(duplicated[:10])}")
        lost = sorted(g for g in wanted if seen.get(g, 0) == 0)
        if lost:
            problems.append(f"{view.info.label}: canary GTIDs missing from its recent binlog: {', '.join(lost)}")
    return problems


def _sent_to(server_id: int | None) -> str:
    return "no server (no writable master found)" if server_id is None else unknown_server(server_id)
