"""Failover: the master is lost. Confirm it (it answers but reports itself failed; or it does not answer, no replica
is still connected to it — and, when automatic, at least one replica says it lost it too), let every candidate
apply what it received (the candidate rules of `candidates`: a delayed or `must_not` replica is never waited for
nor promoted automatically), choose the most advanced candidate (ahead of the others in every domain, the better
promotion rule first; where none is, the least behind is leveled from its peers by START … UNTIL — a more advanced
non-candidate among them) and name the change consumers of the servers it moves with what happens to each stream
(plan_consumers.py: a dead master's cannot be listed, and the plan says so), pre-hooks, fence the old master first if
it answers at all (read-only, sessions bypassing it ended), promote the candidate, repoint the others, fence the old
master for good (read-only whenever it answers again, never repointed automatically), report the GTIDs that may be
lost, verify, and suspend automatic failover until an operator acknowledges. A delayed replica is held before the
promotion (`hold_delayed`: it applies nothing more the candidate may lack) and repointed with its delay and its
position (it re-reads from the new master what it had not applied). When the promoted server is
`prefer_not` and a better candidate exists, the result names it (`role_moves_to_registered_server_id`) and a
switchover to it follows once the failover has ended (`follow_up`). A failover drill replaces a master that still
answers (`replace_master` with `live`: fenced alive, as orchestrator's force-master-failover; the candidate applies
all it has before the promotion)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

from ferry_control.core.config import Settings
from ferry_control.core.gtid import GtidPosition
from ferry_control.drivers.base import ReplicaConnection, ServerStatus
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation import FailoverParams
from ferry_control.schemas.operation_results import (
    CheckResult,
    FailoverResult,
    LostDomain,
    LostReport,
    ReplacesMaster,
)
from ferry_control.services.orchestrator import actions, moves, routing
from ferry_control.services.orchestrator.actions import LEVEL_PREFIX
from ferry_control.services.orchestrator.candidates import (
    better_successor,
    candidate_pool,
    choice_detail,
    choose_candidate,
    delay_of,
)
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.fencing import fence, record_fence, suspend_automatic_failover
from ferry_control.services.orchestrator.gtid import gtid_text, join_all, position
from ferry_control.services.orchestrator.hub_failover import fail_over_hub, stored_incoming
from ferry_control.services.orchestrator.moves import FailoverMove, MoveContext, Observed, Settled
from ferry_control.services.orchestrator.plan_consumers import plan_consumers
from ferry_control.services.orchestrator.runner import Compensation, OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView
from ferry_control.services.orchestrator.switchover import (
    commits_landed,
    complete_move,
    follow_new_master,
    role_taken,
    roll_forward,
)
from ferry_control.services.orchestrator.writable import (
    new_master_domains,
    record_completed,
    record_writable,
    recorded_words,
    replaced_domains,
)


@dataclass(frozen=True)
class MasterLoss:
    """What the replicas say about the master."""

    master: ServerView | None
    confirmed: bool
    detail: str
    #: Replicas whose connection to the master runs and has lost it.
    witnesses: tuple[str, ...] = ()


def confirm_master_lost(snapshot: ClusterSnapshot, *, need_witness: bool, source_id: int | None = None) -> MasterLoss:
    """Whether the master — `source_id` (a root, or an intermediate master), else the only master or of several the
    only one lost (`ClusterSnapshot.lost_root`) — is lost."""
    master, why = snapshot.lost_root(source_id)
    if master is None:
        return MasterLoss(None, False, why)
    if master.healthy:
        return MasterLoss(master, False, f"{master.info.label} answers and reports no failure: use a switchover")
    links = snapshot.replicas_of(master.info.id)
    if master.status is not None and master.status.failure:
        # It answers and says it cannot work (a failed write or sync: it refuses commits): its own word confirms
        # the loss, whether or not its replicas are still connected to it.
        return MasterLoss(master, True, f"{master.info.label} answers but reports a failure: {master.status.failure}")
    connected = [link.replica.info.label for link in links if link.replicating]
    if connected:
        return MasterLoss(
            master,
            False,
            f"{', '.join(connected)} still replicate(s) from {master.info.label}: the master is alive and only the "
            f"control plane lost it ({master.error})",
        )
    witnesses = tuple(link.replica.info.label for link in links if link.lost_master)
    if need_witness and not witnesses:
        return MasterLoss(
            master, False, f"no replica with a running connection to {master.info.label} confirms losing it"
        )
    return MasterLoss(
        master,
        True,
        f"{master.info.label} does not answer ({master.error or 'failing'}); lost by "
        + (", ".join(witnesses) if witnesses else "no running replica (operator's decision)"),
        witnesses,
    )


async def probe_master(snapshot: ClusterSnapshot, settings: Settings, source_id: int | None = None) -> None:
    """With `master_write_probe` on, a master that answers and reports no failure must also commit a probe write in
    time (as the collector checks at every poll); one that cannot has that failure set on its view, so
    `confirm_master_lost` sees a master that cannot work, confirmed live."""
    master, _ = snapshot.lost_root(source_id)
    if not settings.failover.master_write_probe or master is None or not master.healthy or master.driver is None:
        return
    assert master.status is not None
    if master.status.read_only:
        return
    reason = await master.driver.write_probe(
        master.status.default_domain, settings.failover.master_write_probe_timeout_s
    )
    if reason is not None:
        master.status = replace(master.status, failure=f"write probe: {reason}")


def lost_report(
    old_master: ServerView, new_master_position: Any, heard_by_replicas: Any = None, now: datetime | None = None
) -> LostReport:
    """Per domain, what the old master was last seen with beyond the new master (may be lost): the newer of the
    collector's last successful observation of it (with that observation's time and age) and of the master position
    its replicas last heard from it."""
    last_seen, seen_at = old_master.info.last_binlog_pos, old_master.info.last_seen_at
    heard = heard_by_replicas if heard_by_replicas is not None else position("")
    domains = []
    if last_seen or str(heard):
        seen = join_all([position(last_seen), heard])
        for gtid in seen:
            mine = new_master_position.get(gtid.domain)
            if mine is None or gtid.seq > mine.seq:
                domains.append(
                    LostDomain(
                        domain=gtid.domain,
                        old_master_last_seen=gtid_text(gtid),
                        new_master=None if mine is None else gtid_text(mine),
                        transactions_possibly_lost=gtid.seq - (mine.seq if mine is not None else 0),
                    )
                )
    age_s = None if seen_at is None else round(((now or datetime.now(UTC)) - seen_at).total_seconds(), 3)
    if seen_at is None:
        note = (
            "the collector never observed the old master; from what its replicas last heard of its binlog only: "
            "transactions it committed and never sent are not known here"
        )
    else:
        note = (
            f"from the collector's last successful poll of the old master, {age_s} s before this report, and what "
            "its replicas last heard of its binlog; transactions it committed after that and never sent are not "
            "known here"
        )
    if old_master.info.replicas_may_be_ahead:
        note += (
            "; the old master sent transactions to its replicas before they were durable in its binlog, so if its "
            "machine crashed, its binlog may lack transactions the new master has: it must rejoin as a replica of "
            "the new master, never serve as a master again before that"
        )
    return LostReport(
        old_master_replicas_may_be_ahead=old_master.info.replicas_may_be_ahead,
        old_master_last_seen_position=last_seen,
        old_master_last_seen_at=seen_at,
        old_master_last_seen_age_s=age_s,
        old_master_position_heard_by_replicas=str(heard),
        new_master_position=str(new_master_position),
        domains=domains,
        note=note,
    )


async def run_failover(ctx: OperationContext[FailoverParams, FailoverResult]) -> None:
    settings = ctx.settings
    automatic = ctx.params.automatic
    async with ctx.step("confirm_master_lost") as step:
        snapshot = await ctx.snapshot()
        source_id = ctx.params.source_registered_server_id
        await probe_master(snapshot, settings, source_id)
        loss = confirm_master_lost(snapshot, need_witness=automatic, source_id=source_id)
        step.detail = loss.detail
        if not loss.confirmed:
            raise refused(f"failover refused, nothing was changed: {loss.detail}")
    master = loss.master
    assert master is not None
    ctx.result.old_master_registered_server_id, ctx.result.witnesses = master.info.id, list(loss.witnesses)
    wanted = ctx.params.candidate_registered_server_id
    links = snapshot.replicas_of(master.info.id)
    pool = candidate_pool(links, master, snapshot.candidate_labels, wanted)
    if wanted is not None and not pool.eligible:
        label = snapshot.view(wanted).info.label if wanted in snapshot.by_id else f"server {wanted}"
        raise refused(
            f"failover refused, nothing was changed: {label} cannot replace {master.info.label}: "
            + pool.excluded.get(label, "it is not a replica of the lost master")
        )
    if not pool.eligible:
        raise refused(
            f"failover refused, nothing was changed: no replica of {master.info.label} can take over: "
            + ("; ".join(f"{label}: {why}" for label, why in pool.excluded.items()) or "it has no replicas")
        )
    incoming = await stored_incoming(ctx, master.info.id)
    if incoming:  # an intermediate master: its replicas are re-homed under one of them
        await fail_over_hub(ctx, snapshot, master, incoming, pool)
        return
    async with ctx.step("drain_relay_logs") as step:
        # Only candidates are waited for: a delayed replica (or any other that will not be promoted) keeps its relay
        # log and its delay, and is repointed with them. With a named candidate, the replicas that would have been
        # candidates are waited for too: the candidate is leveled from what they applied, and a peer still applying
        # would end with a write the new master lacks (lost there, errant on the peer).
        peers = [] if wanted is None else candidate_pool(links, master, snapshot.candidate_labels).eligible
        waited = [*pool.eligible, *(p for p in peers if p.replica.info.id != wanted)]
        drained = await actions.drain_relay_logs(waited, settings.failover.relay_drain_timeout_s)
        step.detail = {"drained": drained, "not_waited_for": pool.excluded}
    await replace_master(ctx, await ctx.snapshot(), master, wanted)


#: A failover's result, or a failover drill's (both record the replacement).
Replacing = TypeVar("Replacing", bound=ReplacesMaster)


async def replace_master(
    ctx: OperationContext[Any, Replacing],
    snapshot: ClusterSnapshot,
    master: ServerView,
    wanted: int | None,
    *,
    live: Compensation | None = None,
) -> None:
    """From the choice of the candidate to the verification: choose (`wanted`, else the best), check it, fence the
    old master first, bring the candidate level, promote it, fence the old master for good, report what may be lost,
    repoint the others. With `live` — a master fenced alive, a failover drill's — the old master answers: once it is
    fenced its commits in flight land and the candidate applies everything it has before it is promoted (nothing it
    acknowledged is lost), `live` puts it back in service if the failover stops before the promotion, and automatic
    failover is not suspended (the drill rejoins it)."""
    settings = ctx.settings
    links = snapshot.replicas_of(master.info.id)
    # Replicas below a server that does not answer (a chain under one of the lost master's replicas): what they
    # hold came from the lost master through it, so the candidate is compared with them and leveled from them too.
    chained = below_unreachable(snapshot, master)
    async with ctx.step("choose_candidate") as step:
        pool = candidate_pool(links, master, snapshot.candidate_labels, wanted)
        chosen, level, why = choose_candidate(pool.eligible, [*links, *chained])
        successor = None if wanted is not None else better_successor(chosen, pool.eligible)
        if successor is not None:
            why += (
                f"; its promotion rule is prefer_not, so the role then moves on to {successor.replica.info.label} "
                "(prefer) by a switchover once this failover has ended"
            )
        step.detail = choice_detail(chosen, why, links, pool.eligible, pool.excluded)
    candidate = chosen.replica
    ctx.result.new_master_registered_server_id = candidate.info.id
    ctx.result.consumers, ctx.result.consumers_note = plan_consumers(
        master,
        candidate,
        [link.replica for link in links if link is not chosen and not link.replica.info.maintenance],
        "failover" if live is None else "failover_drill",
    )
    if successor is not None:
        ctx.result.role_moves_to_registered_server_id = successor.replica.info.id
    async with ctx.step("candidate_checks") as step:
        checks = await candidate.require_driver().replication_checks()
        step.detail = {"checks": [asdict(c) for c in checks]}
        ctx.result.checks = [CheckResult.of(c) for c in checks]
        failed = [c for c in checks if not c.passed]
        if failed:
            raise refused(
                f"failover refused, nothing was changed: {candidate.info.label} cannot be the master: "
                + "; ".join(f"{c.name}: {c.detail}" for c in failed)
            )
    if ctx.dry_run:
        return
    await ctx.pre_hooks(
        old_master_registered_server_id=master.info.id, new_master_registered_server_id=candidate.info.id
    )
    others = [
        link for link in links if link is not chosen and not link.replica.info.maintenance and link.replica.reachable
    ]
    # Servers that do not answer (whom they replicate from cannot be read: maybe the lost master): left behind, and
    # said so when the operation ends.
    behind = [
        view for view in snapshot.views
        if not view.reachable and view.info.id not in (master.info.id, candidate.info.id) and not view.info.maintenance
    ]  # fmt: skip
    running = [c.name for c in (candidate.status.connections if candidate.status else ()) if c.running]
    ctx.result.candidate_ran = running
    await ctx.save()  # the plan in the database before the first move (what a reconcile after a crash reads)
    plan = FailoverMove(master.info.id, candidate.info.id, tuple(running))
    observed = snapshot.by_id
    ctx.undo_with("undo", live or partial(_undo, ctx, plan, observed))
    started = time.perf_counter()
    async with ctx.step("fence_old_master_first") as step:
        await routing.writer_leaving(ctx, master.info.id)
        step.detail = await fence_first(master, settings.collection.poll_timeout_s)
    if live is not None:
        async with ctx.step("candidate_applies_fenced_master") as step:
            step.detail = await applied_from_fenced(master, chosen, settings)
    async with ctx.step("bring_level") as step:
        if level:
            step.skipped = True
            step.detail = f"{candidate.info.label} is already ahead of every other replica"
        else:
            leveled = []
            # Another master's domains are never leveled: each server gets them from that master.
            exclude = other_masters_domains(snapshot, master, links)
            for link in [*links, *chained]:
                if link is chosen or not link.replica.reachable or link.replica.info.id == candidate.info.id:
                    continue
                done = await actions.level_with(candidate, link.replica, f"{LEVEL_PREFIX}{link.replica.info.id}",
                                                settings.operations.switchover_catch_up_timeout_s,
                                                exclude)  # fmt: skip
                if done:
                    leveled.append(done)
            step.detail = leveled
    if live is None:  # a master fenced alive gave the candidate all it has (`applied_from_fenced`): nothing to hold
        async with ctx.step("hold_delayed_replicas") as step:
            step.detail = await hold_delayed(others)
            step.skipped = not step.detail
    async with ctx.step("promote_candidate") as step:
        driver = candidate.require_driver()
        # Only its connections to the lost master go (and a leveling's temporary ones): a multi-source candidate
        # keeps replicating the domains of the cluster's other masters.
        assert candidate.status is not None
        kept = [
            c.name for c in candidate.status.connections
            if (source := snapshot.master_of(c)) is not None and source.info.id != master.info.id
        ]  # fmt: skip
        names = [c.name for c in await driver.replica_connections() if c.name not in kept]
        # Fenced before the candidate can take a write: should the operation end anywhere after this, the old master
        # is still never writable again beside it.
        await record_fence(ctx, master, f"replaced by {candidate.info.label} in failover operation {ctx.operation_id}")
        # The old master's master-side settings (semi-sync) as the collector last read them, before writes come.
        role = master.info.master_role
        if role is not None:
            await driver.take_master_role(role)
        if live is None:  # from here a stop completes or undoes as the candidate says (`promoted`)
            ctx.undo_with("settle", partial(_settle, ctx, plan, observed))
        await actions.promote(driver, names)
        # A candidate that keeps replicating the other masters writes the lost master's domains only: recorded for
        # the replica guard while this operation holds the cluster (else, replicating and writable, it is made
        # read-only once the operation ends), and said in the step.
        taken: list[int] = []
        if kept:
            taken = new_master_domains(seen_of(master, links).domains(), candidate, kept)
            await record_writable(ctx, candidate.info.id, taken)
        # Writable now (`promoted`, as read from it by a settle): a stop from here completes, without reading it
        # again — a candidate that stops answering here is still the master, and the others must follow it.
        ctx.undo_with("roll_forward", partial(roll_forward, ctx, plan, observed))
        await routing.writer_arrived(ctx, candidate.info.id, master.info.id)
        restart = [n for n in kept if n in running]
        if not level:  # the leveling stopped every connection: those that ran start again
            await actions.restore_connections(candidate, restart, LEVEL_PREFIX)
        else:
            await actions.restart_connections(driver, restart)
        step.detail = f"{candidate.info.label} is the master and writable (removed connections: {', '.join(names)})" + (
            "" if role is None else role_taken(role, f"{master.info.label} when last seen")
        )
        if kept:
            kept_masters = [snapshot.master_of(c) for c in candidate.status.connections if c.name in kept]
            sources = sorted({view.info.label for view in kept_masters if view is not None})
            step.detail += (
                f"; it keeps replicating from {', '.join(sources)} (connections {', '.join(map(repr, kept))}): "
                f"writes to it must stay in the domains {master.info.label} wrote, the others' domains are theirs"
            ) + recorded_words(taken)
    ctx.undo_with("roll_forward", partial(roll_forward, ctx, plan, observed))
    ctx.result.promoted_after_s = round(time.perf_counter() - started, 6)
    new_position = position((await candidate.require_driver().positions()).current)
    async with ctx.step("fence_old_master") as step:
        await fence(ctx, master, f"replaced by {candidate.info.label} in failover operation {ctx.operation_id}")
        step.detail = (
            f"{master.info.label} is fenced: read-only whenever it answers again, never repointed automatically"
        )
    async with ctx.step("lost_report") as step:
        heard = join_all(position(link.connection.master_position) for link in links)
        report = lost_report(master, new_position, heard)
        ctx.result.possibly_lost = report
        step.detail = report.model_dump(mode="json")
    if live is None:
        await suspend_automatic_failover(ctx)
    await follow_new_master(ctx, candidate, [o.replica for o in others], [o.connection.name for o in others],
                            old_master=None, delayed={o.replica.info.id for o in others if delay_of(o)},
                            unreachable=behind, left_with_unreachable=chained, plan=plan,
                            observed=observed)  # fmt: skip


async def hold_delayed(others: Sequence[Link]) -> list[str]:
    """Stops the delayed replicas' connections to the lost master before the candidate is promoted: what such a replica
    received but has not applied yet (its relay log) may hold writes of the lost master the candidate lacks — it is
    never waited for nor leveled from —, and applied once its delay ran out it would be errant on that replica and
    lost on the new master. Held, it applies nothing more; its repoint (live, or a reconcile's completion however
    late) takes it on from what it applied, with its delay (`follow_new_master`). A failover undone before the
    promotion starts them again (`undo_failover`). Returns what was held, in words; a replica that does not answer
    is not held (it is named when it is repointed)."""
    held = []
    for link in others:
        if not delay_of(link) or not link.connection.running or link.replica.driver is None:
            continue
        try:
            await link.replica.driver.stop_replication(link.connection.name)
        except DriverError as e:
            held.append(
                f"{link.replica.info.label}: connection {link.connection.name!r} not held: {e.code}: {e.message}"
            )
            continue
        held.append(f"{link.replica.info.label}: delayed connection {link.connection.name!r} stopped (its relay log "
                    "unapplied) until it follows the new master")  # fmt: skip
    return held


def other_masters_domains(snapshot: ClusterSnapshot, master: ServerView, links: Sequence[Link]) -> set[int]:
    """The domains the cluster's other masters (the roots that answer, but the lost `master`) write — less those
    the lost master was seen with (its last observed binlog, what its replicas last heard of it): a multi-source
    server gets them from those masters, so a leveling never copies them from a peer (the peer, repointed to the
    candidate, would then be ahead of it in that domain) nor moves them."""
    others: set[int] = set()
    for root in snapshot.roots():
        if root.info.id == master.info.id:
            continue
        if root.status is not None:
            others |= set(root.binlog.domains())
            continue
        # One that does not answer now: its domains as last seen, and those whose newest GTID on a server that
        # answers it wrote itself.
        others |= set(position(root.info.last_binlog_pos or "").domains())
        server_id = root.info.reported_server_id
        others |= {g.domain for v in snapshot.views if v.status is not None for g in v.current if g.server == server_id}
    return others - set(seen_of(master, links).domains())


def seen_of(master: ServerView, links: Sequence[Link]) -> GtidPosition:
    """The lost `master` as last seen: its last observed binlog joined with what its replicas (`links`) last heard of
    it."""
    return join_all([position(master.info.last_binlog_pos or ""),
                     *(position(link.connection.master_position) for link in links)])  # fmt: skip


def below_unreachable(snapshot: ClusterSnapshot, master: ServerView) -> list[Link]:
    """The links of the reachable servers (not in maintenance) that replicate, directly or down a chain, from a
    server other than the lost `master` that does not answer: whom that one replicates from cannot be read, so what
    they hold may have come from the lost master."""
    found: list[Link] = []
    pending = [v.info.id for v in snapshot.views if not v.reachable and v.info.id != master.info.id]
    seen = set(pending)
    while pending:
        for link in snapshot.replicas_of(pending.pop()):
            replica = link.replica
            if replica.info.id in seen or replica.info.id == master.info.id:
                continue
            seen.add(replica.info.id)
            pending.append(replica.info.id)
            if replica.reachable and not replica.info.maintenance:
                found.append(link)
    return found


def promoted(status: ServerStatus, old_address: str | None) -> bool:
    """A failover's point of no return, judged from its candidate (live, and by the reconcile after a crash): it is
    promoted once it is writable or its connections to the lost master (at `old_address`; None: not known, then
    every connection but a leveling's temporary ones) are gone — a multi-source candidate keeps those to the
    cluster's other masters through its promotion. Before: undone; after: completed."""
    return not (status.read_only and _to_lost(status.connections, old_address))


def _to_lost(connections: Sequence[ReplicaConnection], old_address: str | None) -> list[ReplicaConnection]:
    return [
        c for c in connections
        if not c.name.startswith(LEVEL_PREFIX) and (old_address is None or c.master_address == old_address)
    ]  # fmt: skip


def _address_of(observed: Observed, server_id: int) -> str | None:
    view = observed.get(server_id)
    return None if view is None else view.info.protocol_address


async def undo_failover(ctx: MoveContext, plan: FailoverMove, observed: Observed) -> Settled:
    """The one undo of a failover before its candidate was promoted, live or after a crash (repairs.py): the
    candidate's temporary leveling connections removed and its connections that ran when the failover began started
    again (a leveling stops them all; a row recorded before `candidate_ran`: those to the lost master). Nothing
    else was changed before the promotion but the old master's fence, which stays."""
    candidate = observed.get(plan.new_master_server_id)
    if candidate is None:
        return Settled([], ["the candidate is no longer registered"])
    label = candidate.info.label
    try:
        driver = candidate.require_driver()
        current = await driver.replica_connections()
    except DriverError as e:
        return Settled([], [f"{label}: {e}"])
    done: list[str] = []
    problems: list[str] = []
    for connection in current:
        if connection.name.startswith(LEVEL_PREFIX):
            try:
                await driver.remove_replication(connection.name)
                done.append(f"{label}: temporary connection {connection.name!r} removed")
            except DriverError as e:
                problems.append(f"{label}: {e}")
    if plan.candidate_ran is not None:
        again = [c.name for c in current if c.name in plan.candidate_ran and not c.running]
    else:
        lost = _address_of(observed, plan.old_master_server_id)
        again = [c.name for c in _to_lost(current, lost) if not c.running]
    for name in again:
        await _start_again(candidate, name, "", done, problems)
    await _release_delayed(observed, plan, done, problems)
    return Settled(done, problems)


async def _release_delayed(observed: Observed, plan: FailoverMove, done: list[str], problems: list[str]) -> None:
    """Starts again the delayed replicas' connections to the lost master that `hold_delayed` stopped (stopped
    without an error: a hold's) — the failover is undone, nothing replaces their master."""
    lost = _address_of(observed, plan.old_master_server_id)
    for view in observed.values():
        if view.info.id in (plan.new_master_server_id, plan.old_master_server_id) or view.driver is None:
            continue
        if view.status is None or not any(c.delay_s for c in view.status.connections):
            continue
        try:
            current = await view.driver.replica_connections()
        except DriverError as e:
            problems.append(f"{view.info.label}: {e}")
            continue
        for c in _to_lost(current, lost):
            if c.delay_s and not c.running and c.last_error is None and lost is not None:
                await _start_again(view, c.name, " (held by the failover)", done, problems)


async def complete_failover(ctx: MoveContext, plan: FailoverMove, observed: Observed) -> Settled:
    """The one completion of a failover once its candidate was promoted (`promoted`), live or after a crash
    (repairs.py): the candidate's leveling connections and connections to the lost master removed, its connections
    to the cluster's other masters that stopped cleanly started again, then `complete_move`: the candidate writable
    and every other server that replicates from the lost master or the candidate (not in maintenance) following it
    — one that cannot be read is named, not repointed —, a candidate that keeps connections to other masters with its
    writable domains recorded (writable.py), and the candidate in service as the writer on every proxy.
    The lost master was recorded fenced before the promotion: it stays read-only whenever it answers."""
    new = observed.get(plan.new_master_server_id)
    if new is None or new.info.protocol_address is None:
        return Settled([], ["the candidate is no longer registered"])
    label, lost = new.info.label, _address_of(observed, plan.old_master_server_id)
    done: list[str] = []
    problems: list[str] = []
    kept: list[str] = []  # its connections to the cluster's other masters
    try:
        driver = new.require_driver()
        current = await driver.replica_connections()
        for connection in current:
            temporary = connection.name.startswith(LEVEL_PREFIX)
            if temporary or (lost is not None and connection.master_address == lost):
                if connection.running:
                    await driver.stop_replication(connection.name)
                await driver.remove_replication(connection.name)
                done.append(f"{label}: connection {connection.name!r} removed")
                continue
            kept.append(connection.name)
            if not connection.running and connection.last_error is None:
                await _start_again(new, connection.name, " to another master", done, problems)
    except DriverError as e:
        problems.append(f"{label}: {e}")
    others: list[tuple[ServerView, str]] = []
    for view in observed.values():
        if view is new or view.info.id == plan.old_master_server_id or view.info.maintenance:
            continue
        if view.status is None:
            problems.append(
                f"{view.info.label}: its replication could not be read ({view.error}): not repointed to {label} — "
                "repoint it once it answers"
            )
            continue
        for connection in view.status.connections:
            if connection.master_address in (lost, new.info.protocol_address):
                others.append((view, connection.name))
    completed = await complete_move(ctx.settings, new, others, None)
    # As the live run records them once it promoted the candidate; with the lost master's address unknown, which
    # connections are the other masters' is unknown too, and nothing is recorded.
    if completed.writable and kept and lost is not None:
        taken = new_master_domains(replaced_domains(observed.get(plan.old_master_server_id), new), new, kept)
        recorded, not_recorded = await record_completed(ctx, new, taken)
        done.extend(recorded)
        problems.extend(not_recorded)
    if completed.writable:
        await routing.writer_arrived(ctx, new.info.id, plan.old_master_server_id)
    return Settled(done + completed.done, problems + completed.problems)


async def _start_again(view: ServerView, name: str, what: str, done: list[str], problems: list[str]) -> None:
    """Starts a connection a stop left stopped, saying so in `done` or what failed in `problems`."""
    try:
        await view.require_driver().start_replication(name)
        done.append(f"{view.info.label}: connection {name!r}{what} started again")
    except DriverError as e:
        problems.append(f"{view.info.label}: connection {name!r}{what} not started again: {e}")


async def _undo(ctx: OperationContext[Any, Any], plan: FailoverMove, observed: Observed) -> str:
    """The live run's undo before the promotion (`undo_failover`). Raises OperationFailed naming what it could not
    do."""
    settled = await undo_failover(ctx, plan, observed)
    if settled.problems:
        raise OperationFailed("; ".join(settled.problems))
    return "; ".join(settled.done) or "nothing to put back"


async def _settle(ctx: OperationContext[Any, Any], plan: FailoverMove, observed: Observed) -> str:
    """The live run's compensation inside the promotion: completed or undone as `promoted` says of the candidate
    read now (unreadable: the servers are left as they are, for a reconcile or an operator)."""
    candidate = observed[plan.new_master_server_id]
    async with ctx.step("settle", fenced=False) as step:
        try:
            status = await candidate.require_driver().status()
        except DriverError as e:
            step.detail = f"{candidate.info.label} could not be read ({e.code}: {e.message})"
            raise OperationFailed(
                f"{step.detail}: whether it was promoted is unknown, so the servers are left as they are: a reconcile "
                "or an operator must decide"
            ) from e
        done = promoted(status, _address_of(observed, plan.old_master_server_id))
        step.detail = f"{candidate.info.label} " + ("was promoted: completed" if done else "was not promoted: undone")
    if done:
        return await roll_forward(ctx, plan, observed)
    done_words = await moves.as_step(ctx, "undo", partial(undo_failover, ctx, plan, observed))
    return done_words or f"{candidate.info.label} was not promoted: nothing else was changed"


async def applied_from_fenced(master: ServerView, link: Link, settings: Settings) -> str:
    """A master fenced alive: its commits in flight land (its binlog position P once they have), then the candidate
    applies up to P over its connection to it (given up at once if that breaks), so it holds everything the old
    master acknowledged."""
    candidate = link.replica
    target, landed = await commits_landed(master, settings)
    reached = await actions.wait_reached(
        candidate.require_driver(),
        target,
        settings.operations.switchover_catch_up_timeout_s,
        connection=link.connection.name,
    )
    if not reached.reached:
        raise OperationFailed(
            f"{candidate.info.label} did not apply what the fenced {master.info.label} has ({target}) within "
            f"{settings.operations.switchover_catch_up_timeout_s} s: it is at {reached.position}"
            + (f" ({reached.broken})" if reached.broken else "")
        )
    return f"{landed}; {candidate.info.label} applied it ({reached.position})"


async def fence_first(master: ServerView, timeout_s: float) -> str:
    """Before anything is promoted: an old master that answers at all is made read-only and the sessions that
    bypass read-only are ended, so it takes no more writes once another server is writable. One that does not
    answer is fenced after the promotion and whenever it answers again."""
    if master.driver is None:
        return f"{master.info.label} has no admin address: fenced when it is known and answers"
    try:
        async with asyncio.timeout(timeout_s):
            read_only = await master.driver.set_read_only(True)
            ended = await master.driver.kill_sessions_bypassing_read_only()
    except (DriverError, TimeoutError) as e:
        reason = str(e) if isinstance(e, DriverError) else f"no answer within {timeout_s} s"
        return f"{master.info.label} does not answer ({reason}): fenced after the promotion, and when it answers"
    return (
        f"{master.info.label} made read-only before the promotion (read_only={read_only}; sessions bypassing it "
        f"ended: {ended})"
    )
