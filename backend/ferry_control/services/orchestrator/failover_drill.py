"""A failover drill: the master failed over as if it were lost while it still answers (orchestrator's
force-master-failover) — fenced, never killed — with its RTO and RPO measured, then the old master brought back as a
replica of the new one by the rejoin's own steps, and optionally the role moved back.

Steps: the preflight (the source is the cluster's one master, writable; the candidate — fixed, or the next in turn
among the replicas that may replace it — keeps every domain the master has and may be promoted, else the drill is
refused naming each replica and why; its replication checks; the change consumers of the servers it moves and what
happens to each stream, plan_consumers.py) → canaries in every domain on the master, received
everywhere → the live canary writer starts → the failover's moves (`failover.replace_master`, live): pre-hooks, the
old master drained on the proxies, read-only and its sessions that bypass read-only ended (the failover's fence),
its commits in flight landed and everything it has applied by the candidate, the candidate promoted, the old master
fenced for good, the other replicas repointed and verified → the writer gets a write through the new master in every
domain → RPO → the old master rejoins (rejoin.py: read-only replica of the new master over the cluster's
connection name, unfenced) → canaries, checksums and GTIDs verified on every server → optionally the switch back (a
switchover to the old master, as a switchover drill's) → every canary the writer was told had committed is read back
everywhere.

RTO is measured twice: by the failover, from the fence (the proxies told to drain the old master, before its
read-only) to the new master writable (`promoted_after_s`); and by the writer, from its last write acknowledged by
the old master to its first acknowledged by the new one. RPO is the number of canary writes the old master
acknowledged that the new master lacks once promoted: each is read back on it after the writer has a write through
it in every domain (so every write sent to the old master has its answer by then); nothing can reach the new master
from the old one after the promotion removed its connection, so what it lacks then is lost. A live fence makes it 0
(the candidate applied the fenced master's final position), so any loss fails the drill, named; the rejoin's own
comparison of both binlog states (any client's transactions only the old master has) is kept beside it.

Until the promotion, a stop is settled by the rule a switchover's stop follows (`no_return.decide`): the candidate
still replicating from the old master and, fenced, holding no write of its own — undone: the old master writable
again and back in service on the proxies, the candidate replicating from it as before; else completed, everyone (the
old master included) following the candidate. The switch plan (`switch`) is saved before
the fence, so a crash of the API is reconciled as a switchover's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.repositories.drills import DrillRepository
from ferry_control.schemas.operation import RejoinParams
from ferry_control.schemas.operation_results import (
    CheckResult,
    FailoverDrillFigures,
    MasterSwitch,
    RejoinResult,
    ServerConnection,
)
from ferry_control.services.orchestrator import actions, no_return
from ferry_control.services.orchestrator.actions import LEVEL_PREFIX
from ferry_control.services.orchestrator.canary_writer import NAMED_MAX, CanaryWriter
from ferry_control.services.orchestrator.candidates import CandidatePool, candidate_pool
from ferry_control.services.orchestrator.drill_parts import (
    Drill,
    DrillFailed,
    next_in_rotation,
    start_writer,
    switch_back,
    verify,
    verify_writer,
    with_canaries,
    writer_after,
)
from ferry_control.services.orchestrator.failover import replace_master
from ferry_control.services.orchestrator.moves import Observed
from ferry_control.services.orchestrator.plan_consumers import plan_consumers
from ferry_control.services.orchestrator.rejoin import rejoin
from ferry_control.services.orchestrator.runner import OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView
from ferry_control.services.orchestrator.switchover import roll_forward, undo_switch

#: The name of the failover in the writer's ledger and its windows.
MOVE = "failover"


async def preflight(ctx: Drill) -> tuple[ServerView, Link]:
    """The `preflight` step: the master to fail over and the link of the candidate that replaces it, its checks in
    the result. DrillFailed (a refusal: nothing changed) when either is missing."""
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        fixed = ctx.params.candidate_registered_server_id if ctx.params.candidate_strategy == "fixed" else None
        master, why = snapshot.source(ctx.params.source_registered_server_id, fixed)
        if master is None:
            raise DrillFailed([f"no master to fail over: {why}"], refusal=True)
        await snapshot.refresh(master.info.id, ctx.settings.collection.poll_timeout_s)
        _check_source(snapshot, master)
        links = snapshot.replicas_of(master.info.id)
        every = candidate_pool(links, master, snapshot.candidate_labels)  # each replica judged, for the record
        wanted = fixed if fixed is not None else await _next_candidate(ctx, every)
        pool = candidate_pool(links, master, snapshot.candidate_labels, wanted)
        if not pool.eligible:
            raise DrillFailed([no_candidate(master, every if wanted is None else pool, wanted, snapshot)], refusal=True)
        link = pool.eligible[0]
        candidate = link.replica
        checks = await candidate.require_driver().replication_checks()
        ctx.result.checks = [CheckResult.of(c) for c in checks]
        ctx.result.old_master_registered_server_id, ctx.result.new_master_registered_server_id = (
            master.info.id,
            candidate.info.id,
        )
        others = _others(snapshot, master, candidate)
        ctx.result.consumers, ctx.result.consumers_note = plan_consumers(master, candidate, others, "failover_drill")
        step.detail = {
            "master": master.info.label, "candidate": candidate.info.label,
            "domains": sorted(master.binlog.domains()), "not_candidates": every.excluded,
            "checks": [CheckResult.of(c).model_dump() for c in checks],
        }  # fmt: skip
        failed = [c for c in checks if not c.passed]
        if failed:
            reasons = [f"{candidate.info.label} cannot be the master: {c.name}: {c.detail}" for c in failed]
            raise DrillFailed(reasons, refusal=True)
    return master, link


def _check_source(snapshot: ClusterSnapshot, master: ServerView) -> None:
    """A failover drill fails over the cluster's one master, live and writable."""
    label = master.info.label
    if not master.healthy or master.status is None:
        raise DrillFailed([f"{label} does not answer ({master.error}): a failover drill fails over a live master; a "
                           "lost one is a failover's"], refusal=True)  # fmt: skip
    if snapshot.links_of(master.info.id):
        raise DrillFailed([f"{label} is an intermediate master: a failover drill fails over the cluster's master (its "
                           "role is moved by a switchover drill)"], refusal=True)  # fmt: skip
    if len(snapshot.roots()) > 1:
        raise DrillFailed([f"{label} is one master of several: its failover drill is not supported (the live canary "
                           "writer follows one writable master)"], refusal=True)  # fmt: skip
    if master.status.read_only:
        raise DrillFailed(
            [f"{label} is read-only: a failover drill fails over a master that takes writes"], refusal=True
        )


async def _next_candidate(ctx: Drill, every: CandidatePool) -> int | None:
    """A rotation's candidate: among the replicas that may replace the master (the failover's candidate rules), the
    first after the last drill's candidate, wrapping (None: there is none, and the pool says why)."""
    eligible = sorted(link.replica.info.id for link in every.eligible)
    if not eligible:
        return None
    async with session_scope(ctx.sessionmaker) as session:
        last = await DrillRepository(session).last_candidate(ctx.cluster_id)
    return next_in_rotation(eligible, last)


def no_candidate(master: ServerView, pool: CandidatePool, wanted: int | None, snapshot: ClusterSnapshot) -> str:
    """Why no replica can replace the master, in words: each replica and its reasons."""
    domains = ", ".join(str(d) for d in sorted(master.binlog.domains())) or "none yet"
    reasons = "; ".join(f"{label}: {why}" for label, why in pool.excluded.items()) or "it has no replicas"
    if wanted is not None:
        label = snapshot.label_of(wanted)
        why = pool.excluded.get(label, f"it is not a replica of {master.info.label}")
        return (f"failover drill refused, nothing was changed: {label} cannot replace {master.info.label} keeping "
                f"every domain ({domains}): {why}")  # fmt: skip
    return (f"failover drill refused, nothing was changed: no replica of {master.info.label} can take over keeping "
            f"every domain ({domains}) — {reasons}")  # fmt: skip


async def run(ctx: Drill, run_id: int, details: dict[str, Any]) -> None:
    master, link = await preflight(ctx)
    candidate = link.replica
    details.update(old_master_registered_server_id=master.info.id, candidate_registered_server_id=candidate.info.id)
    snapshot = await ctx.snapshot()
    others = _others(snapshot, master, candidate)
    servers = [master, candidate, *others]
    await with_canaries(
        ctx, run_id, details, master, servers,
        lambda writer, canaries: _live(ctx, run_id, details, writer, master, candidate, servers, canaries),
    )  # fmt: skip


def _others(snapshot: ClusterSnapshot, master: ServerView, candidate: ServerView) -> list[ServerView]:
    """The master's other replicas the failover repoints (answering, not in maintenance)."""
    return [
        link.replica for link in snapshot.replicas_of(master.info.id)
        if link.replica.info.id != candidate.info.id and link.replica.reachable and not link.replica.info.maintenance
    ]  # fmt: skip


async def _live(
    ctx: Drill,
    run_id: int,
    details: dict[str, Any],
    writer: CanaryWriter,
    master: ServerView,
    candidate: ServerView,
    servers: list[ServerView],
    canaries: dict[int, str],
) -> None:
    """The failover with the live canary writer running, RPO, the rejoin, the verifications and the switch back."""
    await start_writer(ctx, writer)
    figures = ctx.result.failover = FailoverDrillFigures()
    reasons = await _fail_over(ctx, writer, master.info.id, candidate.info.id, figures)
    reasons += await _rpo(ctx, writer, master, candidate, figures)
    ctx.result.rejoin = RejoinResult()
    try:
        params = RejoinParams(registered_server_id=master.info.id, master_registered_server_id=candidate.info.id)
        await rejoin(ctx, params, ctx.result.rejoin, hooks=False)  # fmt: skip
        figures.rejoined = True
    except OperationFailed as e:
        reasons.append(f"{master.info.label} did not rejoin as a replica of {candidate.info.label}: {e.message}")
    figures.only_on_old_master = ctx.result.rejoin.only_here or []
    ctx.changed()
    following = servers if figures.rejoined else [v for v in servers if v is not master]
    await writer.pause()  # the checksums need the servers at one position
    try:
        reasons += await verify(ctx, following, canaries, run_id, details)
    finally:
        writer.resume()
    if ctx.params.switch_back and figures.rejoined:
        reasons += await switch_back(ctx, writer, master, candidate, details)
    elif ctx.params.switch_back:
        reasons.append(f"not switched back: {master.info.label} did not rejoin")
    kept = None if figures.rejoined else [s for s in writer.servers if s.server_id != master.info.id]
    reasons += await verify_writer(ctx, writer, details, kept)
    if reasons:
        raise DrillFailed(reasons)


async def _fail_over(
    ctx: Drill, writer: CanaryWriter, master_id: int, candidate_id: int, figures: FailoverDrillFigures
) -> list[str]:
    """The failover's moves from a fresh view (the canaries moved the positions), the writer told when they run,
    the plan saved first; then the writer's writes through the new master. Returns the reasons to fail."""
    snapshot = await ctx.snapshot()
    await snapshot.refresh(master_id, ctx.settings.collection.poll_timeout_s)
    master = snapshot.view(master_id)
    link = next((lk for lk in snapshot.replicas_of(master_id) if lk.replica.info.id == candidate_id), None)
    if link is None or master.status is None:
        raise DrillFailed([f"{snapshot.label_of(candidate_id)} no longer replicates from {master.info.label}"])
    candidate = link.replica
    followers = [lk for lk in snapshot.replicas_of(master_id) if lk is not link and lk.replica.reachable
                 and not lk.replica.info.maintenance]  # fmt: skip
    # What a reconcile after a crash reads: undone while the candidate still replicates from the old master and took
    # no write, completed once it was promoted (as a switchover's).
    ctx.result.switch = MasterSwitch(
        old_master_registered_server_id=master_id, new_master_registered_server_id=candidate_id,
        connection=link.connection.name,
        old_master_was_read_only=bool(master.status.read_only),
        candidate_was_read_only=bool(candidate.status and candidate.status.read_only),
        others=[ServerConnection(registered_server_id=o.replica.info.id, connection=o.connection.name)
                for o in followers],
    )  # fmt: skip
    running = [c.name for c in (candidate.status.connections if candidate.status else ()) if c.running]
    observed = {v.info.id: v for v in (master, candidate, *(o.replica for o in followers))}

    async def put_back() -> str:
        return await settle(ctx, master, link, observed, running)

    mark = writer.switch_started(MOVE, master_id, candidate_id)
    succeeded = False
    try:
        await replace_master(ctx, snapshot, master, candidate_id, live=put_back)
        succeeded = True
    finally:
        writer.switch_ended(mark, succeeded)
    figures.rto_s = ctx.result.promoted_after_s
    applied = next((s for s in ctx.steps if s.name == "candidate_applies_fenced_master"), None)
    figures.catch_up_s = None if applied is None else applied.duration_s
    reasons = await writer_after(ctx, writer, mark, candidate)
    figures.writer_rto_s = writer.ledger.window(mark)["window_s"]
    ctx.changed()
    return reasons


async def _rpo(
    ctx: Drill, writer: CanaryWriter, master: ServerView, new_master: ServerView, figures: FailoverDrillFigures
) -> list[str]:
    """The `rpo` step: every canary the old master acknowledged, read back on the new master."""
    async with ctx.step("rpo") as step:
        acknowledged = [a for a in writer.ledger.acknowledged() if a.server_id == master.info.id]
        rows = await new_master.require_driver().read_canaries([a.key for a in acknowledged])
        lost = [
            f"{a.key} ({a.gtid})" for a in acknowledged
            if (row := rows.get(a.key)) is None or any(row.get(k) != v for k, v in a.fields.items())
        ]  # fmt: skip
        figures.rpo_checked, figures.rpo_lost, figures.lost_canaries = len(acknowledged), len(lost), lost[:NAMED_MAX]
        step.detail = {
            "acknowledged_by_old_master": len(acknowledged), "missing_on_new_master": len(lost),
            "lost": lost[:NAMED_MAX],
            "how": f"each canary {master.info.label} acknowledged, read on {new_master.info.label} once it was the "
                   "master (nothing reaches it from the old master after the promotion)",
        }  # fmt: skip
        ctx.changed()
    if not lost:
        return []
    named = ", ".join(lost[:NAMED_MAX]) + (" …" if len(lost) > NAMED_MAX else "")
    return [f"RPO: {len(lost)} canary write(s) acknowledged by {master.info.label} are not on the new master "
            f"{new_master.info.label}: {named}"]  # fmt: skip


async def settle(ctx: Drill, master: ServerView, link: Link, observed: Observed, running: Sequence[str]) -> str:
    """The failover drill's compensation until the promotion, by the rule a switchover's stop and the reconcile
    follow (`no_return.decide`) and with the master switch's one completion and undo (`switchover.complete_switch`,
    `switchover.undo_switch`): the candidate's connection to the old master gone, or the fenced candidate holding
    writes the old master lacks — completed, the others and the old master follow the candidate; else undone — the
    candidate's connections as they were (a leveling's temporary ones removed first), the old master's read-only
    flag as it was and, writable, back in service on the proxies."""
    candidate = link.replica
    switch = ctx.result.switch
    assert switch is not None
    async with ctx.step("settle", fenced=False) as step:
        try:
            verdict = await no_return.decide(candidate, master, link.connection.name, None)
        except no_return.Undecidable as e:
            step.detail = str(e)
            raise OperationFailed(
                f"{e}: whether it took writes as the master is unknown, so the servers are left as they are "
                f"({master.info.label} read-only): a reconcile or an operator must decide"
            ) from e
        step.detail = verdict.detail
    if verdict.complete:
        return await roll_forward(ctx, switch, observed)
    async with ctx.step("undo", fenced=False) as step:
        done: list[str] = []
        problems: list[str] = []
        try:
            done.append(await actions.restore_connections(candidate, running, LEVEL_PREFIX))
        except OperationFailed as e:
            problems.append(e.message)
        put = await undo_switch(ctx, switch, observed)
        done += put.done
        problems += put.problems
        step.detail = {"done": done, "problems": problems}
        if problems:
            raise OperationFailed("; ".join(problems))
    was_read_only = switch.old_master_was_read_only
    return (f"{master.info.label} is " + ("read-only as before" if was_read_only else "writable again")
            + f" and {candidate.info.label} replicates from it as before")  # fmt: skip
