"""What both kinds of drill (drill.py: switchover; failover_drill.py: failover) are made of: the canary rows
written on the master in every domain and waited for everywhere, the live canary writer started and then told of
each move, a switchover under it (a switchover drill's switch, and either kind's switch back), its preflight, and
the verifications — the canaries on every server with their content, table checksums at one position, each canary
GTID once in every recent binlog, and every canary the writer was told had committed read back everywhere."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from typing import Any

from ferry_control.core.naming import unknown_server
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation import DrillParams, SwitchoverParams
from ferry_control.schemas.operation_results import DrillResult, SwitchFigures
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.canary_writer import (
    CanaryWriter,
    SwitchMark,
    WriterServer,
    ledger_record,
    report,
    verify_ledger,
)
from ferry_control.services.orchestrator.gtid import join_all, position
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView
from ferry_control.services.orchestrator.switchover import (
    SwitchoverPlan,
    add_server_checks,
    plan_switchover,
    switch_master,
)

#: Attempts at reading equal positions for the checksum comparison (each after waiting for convergence).
CHECKSUM_ATTEMPTS = 5
#: The error code of a server whose position moved under every reading of its own checksums.
POSITION_MOVING = "position_moving"


#: A drill's operation as its steps see it.
Drill = OperationContext[DrillParams, DrillResult]


def figures(result: DrillResult) -> SwitchFigures:
    """The last switch's figures."""
    return SwitchFigures(
        unavailable_s=result.unavailable_s, catch_up_s=result.catch_up_s, position=result.position,
        catch_up_phase=result.catch_up_phase, window_steps=result.window_steps,
    )  # fmt: skip


class DrillFailed(Exception):
    """Ends a drill as failed, with every reason found; a `refusal` when its checks refused it before anything was
    changed."""

    def __init__(self, reasons: list[str], *, refusal: bool = False):
        super().__init__("; ".join(reasons))
        self.reasons = reasons
        self.refusal = refusal


def next_in_rotation(eligible: Sequence[int], last: int | None) -> int:
    """A rotation's next candidate among `eligible` (sorted ids, not empty): the first after the last drill's
    candidate, wrapping to the first."""
    after = [r for r in eligible if last is not None and r > last]
    return (after or eligible)[0]


async def switch_preflight(
    ctx: Drill, candidate_id: int | None, source_id: int | None = None
) -> tuple[SwitchoverPlan, ClusterSnapshot]:
    """A switchover's preflight from `source_id` (else the plan's source) to `candidate_id` (None: the best), from a
    fresh snapshot with the source's own status read again."""
    snapshot = await ctx.snapshot()
    source_id = source_id if source_id is not None else ctx.params.source_registered_server_id
    master, _ = snapshot.source(source_id, candidate_id)
    if master is not None:
        await snapshot.refresh(master.info.id, ctx.settings.collection.poll_timeout_s)
    plan = plan_switchover(
        snapshot,
        SwitchoverParams(candidate_registered_server_id=candidate_id, source_registered_server_id=source_id),
        ctx.settings,
    )
    await add_server_checks(plan)
    return plan, snapshot


async def start_writer(ctx: Drill, writer: CanaryWriter) -> None:
    """The `canary_writer_start` step: the writer starts, writes for the lead time, and must have a write
    acknowledged in every domain before anything moves."""
    settings = ctx.settings
    async with ctx.step("canary_writer_start") as step:
        writer.start()
        await asyncio.sleep(settings.drills.canary_lead_s)
        missing = await writer.wait_acknowledged(0.0, settings.drills.canary_verify_timeout_s)
        step.detail = {"interval_ms": settings.drills.canary_interval_ms, "phases": writer.ledger.counts()}
        if missing:
            raise DrillFailed([f"the live canary writer got no write acknowledged in domains {missing} before the "
                               f"switch: {refusals(writer)}"])  # fmt: skip


async def switch(
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
    return await writer_after(ctx, writer, mark, link.replica)


async def writer_after(ctx: Drill, writer: CanaryWriter, mark: SwitchMark, new_master: ServerView) -> list[str]:
    """The `canary_writer_after_<move>` step: the writer writes on for the lead time and until each domain has a
    write acknowledged by the new master (bounded). Returns the reasons to fail (a domain whose writes the new
    master never acknowledged)."""
    async with ctx.step(f"canary_writer_after_{mark.name}") as step:
        await asyncio.sleep(ctx.settings.drills.canary_lead_s)
        missing = await writer.wait_acknowledged(
            mark.started_s, ctx.settings.drills.canary_verify_timeout_s, server_id=new_master.info.id
        )
        step.detail = {"phases": writer.ledger.counts(), "window": writer.ledger.window(mark)}
        if missing and writer.ledger.capped:
            step.detail["note"] = f"the writer reached its bound ({writer.per_domain_max} writes per domain)"
        elif missing:
            step.detail["missing_domains"] = missing
            return [f"the live canary writer got no write acknowledged by the new master {new_master.info.label} "
                    f"in domains {missing}: {refusals(writer)}"]  # fmt: skip
    return []


async def switch_back(
    ctx: Drill, writer: CanaryWriter, master: ServerView, candidate: ServerView, details: dict[str, Any]
) -> list[str]:
    """With `switch_back`: a switchover from the candidate back to the original master under the writer (its
    preflight first: refused, it is not switched back and says why). Returns the reasons to fail."""
    try:
        async with ctx.step("switch_back_preflight") as step:
            back, _ = await switch_preflight(ctx, master.info.id, candidate.info.id)
            step.detail = {"checks": [asdict(c) for c in back.checks]}
            if not back.passed:
                raise DrillFailed([f"switch back: {c.name}: {c.detail}" for c in back.failed()])
    except DrillFailed as e:  # not switched back; the canaries written so far are still verified
        return e.reasons
    assert back.master is not None and back.candidate is not None
    reasons = await switch(ctx, writer, "switch_back", back.master, back.candidate, back.others)
    details["switch_back"] = figures(ctx.result).model_dump(mode="json")
    return reasons


def refusals(writer: CanaryWriter) -> str:
    """The last few refused or unknown writes, for a reason."""
    failed = [a for a in writer.ledger.attempts if a.outcome != "acknowledged"][-3:]
    return "; ".join(f"{a.key} {a.outcome} ({a.error}) by {sent_to(a.server_id)}" for a in failed) or "no answer"


async def verify_writer(
    ctx: Drill, writer: CanaryWriter, details: dict[str, Any], servers: Sequence[WriterServer] | None = None
) -> list[str]:
    """Stops the live writer and reads every canary it was told had committed back on every server (`servers`: on
    these only)."""
    async with ctx.step("verify_live_canaries") as step:
        await writer.stop()
        acknowledged = writer.ledger.acknowledged()
        verification = await verify_ledger(
            writer.servers if servers is None else servers, acknowledged, ctx.settings.drills.canary_verify_timeout_s
        )
        details["canary_writer"] = report(writer, verification)
        step.detail = {**details["canary_writer"], "ledger": ledger_record(acknowledged)}
    return verification.reasons()


async def write_canaries(ctx: Drill, master: ServerView, run_id: int) -> dict[int, str]:
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


async def canaries_replicated(ctx: Drill, servers: list[ServerView], canary_position: str) -> None:
    """The `canaries_replicated` step: each server reaches the canaries' position (bounded; a server with one
    connection gives up as soon as it breaks), else the drill fails naming each server that did not."""
    async with ctx.step("canaries_replicated") as step:
        problems = []
        for view in servers:
            names = [c.name for c in view.status.connections] if view.status else []
            reached = await actions.wait_reached(
                view.require_driver(), canary_position, ctx.settings.operations.switchover_catch_up_timeout_s,
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


async def with_canaries(
    ctx: Drill,
    run_id: int,
    details: dict[str, Any],
    master: ServerView,
    servers: list[ServerView],
    live: Callable[[CanaryWriter, dict[int, str]], Awaitable[None]],
) -> None:
    """A drill's evidence around its moves: canary rows written in every domain of `master` (the `write_canaries`
    step) and on every other of `servers` (`canaries_replicated`), then the live canary writer over `servers` for
    `live(writer, canaries)`, stopped whatever its end, its report kept in `details`."""
    async with ctx.step("write_canaries") as step:
        canaries = await write_canaries(ctx, master, run_id)
        details["canaries"] = {str(d): g for d, g in canaries.items()}
        step.detail = details["canaries"]
    await canaries_replicated(ctx, servers[1:], str(position(",".join(canaries.values()))))
    settings = ctx.settings
    writer = CanaryWriter(
        [WriterServer(v.info.id, v.info.label, v.require_driver()) for v in servers], sorted(canaries),
        run_id=run_id, operation_id=ctx.operation_id, interval_s=settings.drills.canary_interval_ms / 1000,
        per_domain_max=settings.drills.canaries_per_domain_max,
    )  # fmt: skip
    try:
        await live(writer, canaries)
    finally:
        await writer.stop()
        details.setdefault("canary_writer", report(writer, None))


def canary_key(run_id: int, domain: int) -> str:
    """The key of a run's canary row in one domain."""
    return f"run{run_id}_d{domain}"


async def verify(
    ctx: Drill,
    servers: list[ServerView],
    canaries: dict[int, str],
    run_id: int,
    details: dict[str, Any],
) -> list[str]:
    """The steps `verify_canaries`, `verify_checksums` and `verify_gtids` on `servers`; returns the reasons to
    fail."""
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
        outcome = await compare_checksums(servers, ctx.settings.drills.checksum_wait_s)
        step.detail = outcome
        if outcome.get("problem"):
            reasons.append(outcome["problem"])
    async with ctx.step("verify_gtids") as step:
        found = await gtid_problems(ctx, servers, canaries)
        step.detail = found or "every canary GTID once on every server; no duplicated GTID in the recent binlogs"
        reasons += found
    details["verified"] = not reasons
    return reasons


async def compare_checksums(servers: list[ServerView], wait_s: float) -> dict[str, Any]:
    """Table checksums of every server at one position: read on each, and where the positions differ, each server
    waits to reach the most advanced and they are read again (`CHECKSUM_ATTEMPTS` times). A cluster that kept
    taking writes throughout (its most advanced position moved at every attempt: client load) never stands at one
    position: the comparison is then not made (`compared` false, said why), and the canaries and GTIDs carry the
    proof; one that stood still at different positions is a problem. A server that cannot take its checksums at
    one position of its own (`POSITION_MOVING`: MariaDB's CHECKSUM TABLE between two reads of its position, under
    load) is a cluster taking writes at that attempt too."""
    moved = 0
    last_target = None
    for attempt in range(1, CHECKSUM_ATTEMPTS + 1):
        try:
            sums = [await view.require_driver().checksums() for view in servers]
        except DriverError as e:
            if e.code != POSITION_MOVING:
                raise
            moved += 1
            continue
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
    if moved >= CHECKSUM_ATTEMPTS - 1:
        return {"attempts": CHECKSUM_ATTEMPTS, "compared": False, "problem": None,
                "note": f"not compared: the cluster kept taking writes over {CHECKSUM_ATTEMPTS} attempts (the "
                        "servers never stood at one position)"}  # fmt: skip
    return {"problem": f"checksums not comparable: positions kept moving over {CHECKSUM_ATTEMPTS} attempts",
            "compared": False}  # fmt: skip


async def gtid_problems(ctx: Drill, servers: list[ServerView], canaries: dict[int, str]) -> list[str]:
    """In each server's recent binlog (`drill_events_scan_max` events): a GTID twice, or a canary GTID missing."""
    problems = []
    wanted = set(canaries.values())
    for view in servers:
        seen: dict[str, int] = {}
        before = None
        scanned = 0
        while scanned < ctx.settings.drills.events_scan_max:
            page = await view.require_driver().recent_events(min(1000, ctx.settings.drills.events_scan_max - scanned),
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


def sent_to(server_id: int | None) -> str:
    """Who a canary write was sent to, in words."""
    return "no server (no writable master found)" if server_id is None else unknown_server(server_id)
