"""Planned switchover: named preflight checks, then old master read-only → in-flight commits land (known exactly
when the driver counts them, else once the position stood still a while) → its position P → the candidate reaches
P (bounded; else undo: the old master writable again, nothing else touched) → promote the candidate (its
master-side settings, then read-only off: the window ends) → cut its connection to the old master → repoint every
other replica to it (slave_pos) → the old master replicates from it (current_pos) → verify. Records the
write-unavailability window (read-only on → new master writable) and each step's timing. From read-only off on the
candidate, a stop undoes or completes as the candidate's binlog says (no_return.py), live or after a crash."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

from ferry_control.core.config import Settings
from ferry_control.core.naming import connection_label
from ferry_control.drivers.base import Check, ConnectionSettings, MasterRole, ReplicaConnection, ServerDriver
from ferry_control.drivers.errors import DriverError, ServerConflict
from ferry_control.models import PromotionRule
from ferry_control.schemas.operation import OperationStep, SwitchoverParams
from ferry_control.schemas.operation_results import (
    CatchUpPhase,
    CheckResult,
    DomainRate,
    MasterSwitch,
    ServerConnection,
    SwitchoverResult,
)
from ferry_control.schemas.server import MasterRoleRead
from ferry_control.services.orchestrator import actions, catch_up_parallel, moves, no_return, prepare, routing
from ferry_control.services.orchestrator.candidates import delay_of, filtered_domains, label_mismatch
from ferry_control.services.orchestrator.catch_up_rates import Prediction
from ferry_control.services.orchestrator.delayed_candidate import chosen_words, delay_note, dry_run_advice, left_out
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.gtid import ahead_of_all, errant_gtids, join_all, position
from ferry_control.services.orchestrator.hub_switchover import switch_hub
from ferry_control.services.orchestrator.moves import MoveContext, Observed, Settled
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView
from ferry_control.services.orchestrator.switch_plan import switch_plan
from ferry_control.services.orchestrator.writable import (
    new_master_domains,
    record_completed,
    record_writable,
    recorded_words,
    replaced_domains,
)

log = logging.getLogger(__name__)


@dataclass
class SwitchoverPlan:
    checks: list[Check] = field(default_factory=list)
    master: ServerView | None = None
    candidate: Link | None = None
    #: The master's other replicas that will be repointed (maintenance ones are left alone).
    others: list[Link] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def add(self, name: str, passed: bool, detail: str) -> bool:
        self.checks.append(Check(name, passed, detail))
        return passed


def candidate_checks(
    link: Link,
    master: ServerView,
    settings: Settings,
    required_labels: Sequence[str] = (),
    other_sources: Sequence[ServerView] = (),
) -> list[Check]:
    """The checks on one replica as the new master (all of them, so a refusal names every reason). A multi-source
    candidate's `other_sources` (its other masters) count as where its transactions came from: a GTID one of them
    has is not errant."""
    replica = link.replica
    info = replica.info
    checks = []
    problems = [w for w, on in (("in maintenance", info.maintenance), ("fenced", info.fenced)) if on]
    if info.promotion_rule == PromotionRule.must_not:
        problems.append("never to be promoted (promotion rule must_not)")
    if (mismatch := label_mismatch(info, master.info, required_labels)) is not None:
        problems.append(f"outside the master's labels: {mismatch}")
    if lost := filtered_domains(link, master):
        problems.append(
            f"filtering out domain(s) {', '.join(map(str, lost))} of {master.info.label} (it would lose them, and so "
            "would every server that follows it): remove the filter first, or choose another candidate"
        )
    checks.append(
        Check("candidate_eligible", not problems, f"{info.label} is " + (" and ".join(problems) or "eligible"))
    )
    healthy = replica.healthy
    failure = replica.status.failure if replica.status is not None else None
    detail = "answers and reports no failure" if healthy else replica.error or f"reports a failure: {failure}"
    checks.append(Check("candidate_healthy", healthy, f"{info.label} {detail}"))
    c = link.connection
    state = f"over {connection_label(c.name)}: running={c.running}, io {c.io_state.value}, sql {c.sql_state.value}"
    if c.last_error is not None:
        state += f", last error {c.last_error.side} {c.last_error.code}: {c.last_error.message}"
    checks.append(Check("candidate_replicating", link.replicating, f"{info.label} {state}"))
    if replica.status is None or master.status is None:
        return checks
    binlog, current = replica.binlog, replica.current
    # Every domain it applied by replication is in its binlog (so replicas can follow it). Per domain presence,
    # not seq_no: one status reads gtid_binlog_pos and gtid_slave_pos a moment apart while it applies.
    unlogged = [d for d in position(replica.status.positions.slave).domains() if binlog.get(d) is None]
    checks.append(
        Check(
            "candidate_logs_replicated",
            not unlogged,
            f"every domain of gtid_slave_pos {replica.status.positions.slave or '(empty)'} is in gtid_binlog_pos "
            f"{binlog}: replicated transactions are logged, so replicas can follow it"
            if not unlogged
            else f"domains {unlogged} were applied by replication but are not in its binlog {binlog}: its "
            "replicas could not follow it",
        )
    )
    sources = [master, *other_sources]
    errant = errant_gtids(
        candidate_binlog_pos=replica.status.positions.binlog,
        candidate_binlog_state=replica.status.positions.binlog_state,
        candidate_server_id=replica.status.server_id,
        master_binlog_pos=str(join_all(position(v.status.positions.binlog) for v in sources if v.status)),
        master_binlog_state=",".join(
            v.status.positions.binlog_state for v in sources if v.status and v.status.positions.binlog_state
        ),
    )
    checks.append(
        Check(
            "no_errant_gtids",
            not errant,
            "no errant GTID in any domain"
            if not errant
            else "; ".join(f"domain {e.domain}: {e.gtid}: {e.reason}" for e in errant),
        )
    )
    behind = master.binlog.difference(current)
    worst_domain = max(behind, key=lambda d: behind[d], default=None)
    worst_tx = behind.get(worst_domain, 0) if worst_domain is not None else 0
    worst_s = max((lag.seconds for lag in c.lag.values()), default=0.0)
    # Lag alone refuses nothing: the catch-up before the window waits until the window the lag implies fits the
    # move's budget, and refuses then with both rates if it never does.
    checks.append(
        Check(
            "candidate_lag",
            True,
            f"behind the master by {worst_tx} transactions"
            + (f" in domain {worst_domain}" if worst_domain is not None else "")
            + f" and {worst_s:.3f} s: it catches up before the master goes read-only, until the window fits the "
            "budget",
        )
    )
    return checks


def plan_switchover(snapshot: ClusterSnapshot, params: SwitchoverParams, settings: Settings) -> SwitchoverPlan:
    plan = SwitchoverPlan()
    master, why = snapshot.source(params.source_registered_server_id, params.candidate_registered_server_id)
    expected = params.expected_master_registered_server_id
    if expected is not None:
        actual = master.info.label if master else "none"
        plan.add(
            "expected_master",
            master is not None and master.info.id == expected,
            f"the caller expects {snapshot.label_of(expected)} as master; the master is {actual}",
        )
    if master is None:
        # Say why servers did not answer (e.g. a login refused): that is often why no master is found.
        unanswered = [f"{v.info.label}: {v.error}" for v in snapshot.views if not v.reachable]
        why += f"; not answering: {'; '.join(unanswered)}" if unanswered else ""
    if not plan.add("master_identified", master is not None, why):
        return plan
    assert master is not None
    plan.master = master
    master_ok = master.healthy
    if not plan.add(
        "master_healthy",
        master_ok,
        f"{master.info.label} answers and reports no failure"
        if master_ok
        else f"{master.info.label}: {master.error or (master.status and master.status.failure)}",
    ):
        return plan  # the candidate is chosen and checked against the master's position: unknown now
    incoming = snapshot.links_of(master.info.id)
    if incoming and master.status is not None and not master.status.read_only:
        names = ", ".join(f"{connection_label(c.connection.name)} from {c.master.info.label}" for c in incoming)
        plan.add(
            "source_shape",
            False,
            f"{master.info.label} takes writes and also replicates ({names}): moving both roles at once is not "
            "supported; move its incoming connections first (repoint them to the candidate), or make it read-only "
            "to move it as an intermediate master",
        )
        return plan
    links = snapshot.replicas_of(master.info.id)
    candidate_id = params.candidate_registered_server_id
    if candidate_id is not None:
        chosen = next((link for link in links if link.replica.info.id == candidate_id), None)
        label = snapshot.label_of(candidate_id)
        if not plan.add(
            "candidate_chosen",
            chosen is not None,
            f"{label} is a replica of {master.info.label}" + chosen_words(chosen, hub=bool(incoming))
            if chosen
            else f"{label} does not replicate from {master.info.label}",
        ):
            return plan
    else:
        others_of = {
            link.replica.info.id: [o.master for o in snapshot.links_of(link.replica.info.id) if o.master is not master]
            for link in links
        }
        chosen, detail = choose_best(links, master, settings, snapshot.candidate_labels, others_of)
        if not plan.add("candidate_chosen", chosen is not None, detail):
            return plan
    assert chosen is not None
    plan.candidate = chosen
    other_sources = [other.master for other in snapshot.links_of(chosen.replica.info.id) if other.master is not master]
    plan.checks += candidate_checks(chosen, master, settings, snapshot.candidate_labels, other_sources)
    plan.others = [link for link in links if link is not chosen and not link.replica.info.maintenance]
    unreachable = [link.replica.info.label for link in plan.others if not link.replica.reachable]
    skipped = [link.replica.info.label for link in links if link.replica.info.maintenance and link is not chosen]
    plan.add(
        "replicas_reachable",
        not unreachable,
        (f"unreachable: {', '.join(unreachable)} (put them in maintenance to leave them out)" if unreachable
         else f"{len(plan.others)} other replica(s) will follow the new master")
        + (f"; left alone (maintenance): {', '.join(skipped)}" if skipped else ""),
    )  # fmt: skip
    return plan


async def add_server_checks(plan: SwitchoverPlan) -> None:
    """The candidate's own checks, in its server's terms (`ServerDriver.replication_checks`: MariaDB's log_bin,
    log_slave_updates, gtid_strict_mode, ROW format, privileges, replication login), added to the plan."""
    if plan.candidate is None or plan.candidate.replica.driver is None or not plan.candidate.replica.reachable:
        return
    label = plan.candidate.replica.info.label
    try:
        checks = await plan.candidate.replica.driver.replication_checks()
    except DriverError as e:
        plan.add("candidate_settings", False, f"{label}: its settings could not be read: {e}")
        return
    plan.checks += [Check(c.name, c.passed, f"{label}: {c.detail}") for c in checks]


def choose_best(
    links: list[Link],
    master: ServerView,
    settings: Settings,
    required_labels: Sequence[str] = (),
    other_sources: Mapping[int, Sequence[ServerView]] | None = None,
) -> tuple[Link | None, str]:
    """The replica passing every candidate check, not delayed, with the best promotion rule; among equals the one
    ahead of all the others (else the least behind)."""

    def failed(link: Link) -> list[str]:
        sources = (other_sources or {}).get(link.replica.info.id, ())
        names = [c.name for c in candidate_checks(link, master, settings, required_labels, sources) if not c.passed]
        if note := delay_note(link):
            names.append(f"{note}, so never chosen automatically")
        return names

    passing = [link for link in links if not failed(link)]
    if not passing:
        reasons = "; ".join(f"{link.replica.info.label}: " + ", ".join(failed(link)) for link in links)
        return None, f"no replica of {master.info.label} can take over ({reasons or 'it has no replicas'})"
    others = {link.replica.info.id: link.replica.current for link in links if link.replica.reachable}

    def is_ahead(link: Link) -> bool:
        return ahead_of_all(link.replica.current, [p for i, p in others.items() if i != link.replica.info.id])

    best = min(
        passing,
        key=lambda link: (
            link.replica.info.promotion_rule.rank,
            not is_ahead(link),
            sum(master.binlog.difference(link.replica.current).values()),
            link.replica.info.id,
        ),
    )
    how = "ahead of every other replica" if is_ahead(best) else "the least behind the master (the wait for P levels it)"
    rule = best.replica.info.promotion_rule.value
    return best, f"{best.replica.info.label} chosen ({rule}): {how}" + left_out([x for x in links if x is not best])


async def run_switchover(ctx: OperationContext[SwitchoverParams, SwitchoverResult]) -> None:
    settings = ctx.settings
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        master, _ = snapshot.source(ctx.params.source_registered_server_id, ctx.params.candidate_registered_server_id)
        if master is not None:
            await snapshot.refresh(master.info.id, settings.collection.poll_timeout_s)
        plan = plan_switchover(snapshot, ctx.params, settings)
        await add_server_checks(plan)
        ctx.result.checks = [CheckResult.of(c) for c in plan.checks]
        failed = plan.failed()
        step.detail = {"checks": [asdict(c) for c in plan.checks]}
        if failed:
            raise refused(
                "preflight failed, nothing was changed: " + "; ".join(f"{c.name}: {c.detail}" for c in failed)
            )
    assert plan.master is not None and plan.candidate is not None
    master, link = plan.master, plan.candidate
    candidate = link.replica
    assert master.status is not None and candidate.info.protocol_address is not None
    ctx.result.old_master_registered_server_id, ctx.result.new_master_registered_server_id = (
        master.info.id,
        candidate.info.id,
    )
    ctx.result.candidate_chosen_by = "caller" if ctx.params.candidate_registered_server_id else "orchestrator"
    hub = bool(snapshot.links_of(master.info.id))
    ctx.result.plan = switch_plan(snapshot, master, link, plan.others)
    if ctx.dry_run:
        max_window_s, timeout_s = prepare.budget(
            ctx, ctx.params.max_window_s, ctx.params.prepare_timeout_s, (await ctx.cluster()).max_window_s
        )
        # A candidate delayed on purpose first (what the move would wait for), then the forecast's.
        said = dry_run_advice(link, hub=hub, max_window_s=max_window_s, prepare_timeout_s=timeout_s,
                              catch_up_timeout_s=settings.operations.switchover_catch_up_timeout_s)  # fmt: skip
        # The forecast: the candidate against its source (a hub too: a candidate stalled below the hub holds its
        # move as it would a master's). A hub's move holds no writes, so it has no window to predict.
        predicted = await prepare.forecast(master, candidate)
        if not hub:
            ctx.result.forecast = catch_up_figures(predicted, max_window_s, predicted.span_s)
        said += prepare.advice(
            candidate.info.label, master.info.label, predicted, max_window_s, delay_of(link), hub=hub
        )
        if said or not hub:
            ctx.result.advice = said
        return
    if hub:
        await ctx.pre_hooks(
            old_master_registered_server_id=master.info.id, new_master_registered_server_id=candidate.info.id
        )
        await switch_hub(ctx, snapshot, master, link, plan.others)
    else:
        await switch_master(ctx, master, link, plan.others, announce=True)


async def switch_master(
    ctx: OperationContext[Any, Any], master: ServerView, link: Link, others: list[Link], *, announce: bool = False
) -> None:
    """The moves of a switchover once the preflight passed (also a drill's): with the cluster's
    `catch_up_parallel_workers`, the candidate's parallel apply raised first and put back at the end whatever the
    outcome (`catch_up_parallel.raised_during`); then `_switch_master`."""
    async with catch_up_parallel.raised_during(ctx, link):
        await _switch_master(ctx, master, link, others, announce=announce)


async def _switch_master(
    ctx: OperationContext[Any, Any], master: ServerView, link: Link, others: list[Link], *, announce: bool = False
) -> None:
    """The catch-up before the window (nothing changed yet; it may refuse), then with `announce` the pre-operation
    webhooks, then the window. Until the candidate is promoted, any end but success undoes (the old master as it
    was, the candidate its replica again); once it is, the rest is completed instead (every other server follows
    the new master)."""
    result = actions.switch_result(ctx)
    settings = ctx.settings
    candidate = link.replica
    master_driver, candidate_driver = master.require_driver(), candidate.require_driver()
    cluster_window_s = (await ctx.cluster()).max_window_s
    max_window_s, prepare_timeout_s = prepare.budget(
        ctx, getattr(ctx.params, "max_window_s", None), getattr(ctx.params, "prepare_timeout_s", None), cluster_window_s
    )
    # The budget the operator accepted for this move, or for the cluster's moves (None: the settings' default).
    accepted_s = getattr(ctx.params, "max_window_s", None) or cluster_window_s
    # Before anything changes: the candidate catches up while the master takes writes, until the window fits.
    predicted = await prepare.catch_up_before_window(
        ctx, master, candidate, max_window_s=max_window_s, timeout_s=prepare_timeout_s, delay_s=delay_of(link)
    )
    result.catch_up_phase = catch_up_figures(predicted, max_window_s, ctx.steps[-1].duration_s)
    if announce:
        await ctx.pre_hooks(
            old_master_registered_server_id=master.info.id, new_master_registered_server_id=candidate.info.id
        )
    master_was_read_only = bool(master.status and master.status.read_only)
    connection = link.connection.name
    # Roles swap whole: the candidate takes the old master's master-side settings (semi-sync) before it takes
    # writes, and the old master replicates with the candidate's connection settings (without its delay or filters).
    role = await master_driver.master_role()
    follower = link.connection.settings
    old_master_settings = None if follower is None else replace(follower, delay_s=0, filters={})
    # What a reconcile after a crash needs, in the database before any server is changed.
    # A multi-source candidate keeps its other masters' connections running (they are restarted after the move).
    kept = [c.name for c in (candidate.status.connections if candidate.status else ()) if c.name != connection
            and c.running]  # fmt: skip
    # The candidate's own master-side settings, read ahead of the window: inside it only what differs is set, and an
    # undo — live, or a reconcile's — puts them back even when taking the old master's stopped part-way.
    candidate_role = await candidate_driver.master_role()
    result.switch = switch = MasterSwitch(
        old_master_registered_server_id=master.info.id, new_master_registered_server_id=candidate.info.id,
        connection=connection, old_master_was_read_only=master_was_read_only,
        candidate_was_read_only=bool(candidate.status and candidate.status.read_only),
        others=[ServerConnection(registered_server_id=o.replica.info.id, connection=o.connection.name) for o in others],
        candidate_keeps=kept, candidate_role=MasterRoleRead.model_validate(asdict(candidate_role)),
    )  # fmt: skip
    await ctx.save()
    promoting = False  # the candidate's part began: an undo puts back its settings and its connection

    observed = {v.info.id: v for v in (master, candidate, *(o.replica for o in others))}

    async def put_back() -> str:
        await undo(ctx, observed, candidate_touched=promoting)
        return (
            f"{master.info.label} is "
            + ("read-only as before" if master_was_read_only else "writable again")
            + f" and {candidate.info.label} replicates from it as before"
        )

    async def settle() -> str:
        """Read-only off was sent to the candidate: completed or undone as no_return.decide says."""
        async with ctx.step("settle", fenced=False) as step:
            try:
                verdict = await no_return.decide(candidate, master, connection, result.position)
            except no_return.Undecidable as e:
                step.detail = str(e)
                raise OperationFailed(
                    f"{e}: whether it took writes as the master is unknown, so the servers are left as they are "
                    f"({master.info.label} read-only, {candidate.info.label} not yet cut from it): a reconcile or an "
                    "operator must decide"
                ) from e
            step.detail = verdict.detail
        if not verdict.complete:
            return await put_back()
        return await roll_forward(ctx, switch, observed)

    ctx.undo_with("undo", put_back)
    # Outside the window: who could write despite read-only (MariaDB reads grants and roles), so inside it only
    # their sessions are looked for.
    await master_driver.prepare_read_only()
    window_started = time.perf_counter()
    try:
        async with ctx.step("old_master_read_only") as step:
            await routing.writer_leaving(ctx, master.info.id)  # proxies stop sending it new writers first
            # The window: from here until the candidate takes writes, the steps' records wait (`hold_records`).
            await ctx.hold_records()
            window_started = time.perf_counter()
            # Not read back: the in-flight step next reads the flag with the position (and fails if it is off).
            await master_driver.set_read_only(True, confirm=False)
            # read_only does not stop every user (MariaDB: SUPER, READ ONLY ADMIN): their sessions are ended.
            killed = await master_driver.kill_sessions_bypassing_read_only()
            step.detail = f"{master.info.label} refuses writes; {killed} session(s) that could bypass read-only ended"
            read_only_s = time.perf_counter() - window_started  # the proxies' part came before the window
        async with ctx.step("wait_in_flight_commits") as step:
            target, step.detail = await commits_landed(master, settings)
        result.position = target
        # Bounded as configured, or by the window the operator accepted when that is longer.
        await actions.candidate_catch_up(
            ctx,
            candidate,
            target,
            connection,
            timeout_s=max(settings.operations.switchover_catch_up_timeout_s, accepted_s or 0.0),
        )
        async with ctx.step("promote_candidate") as step:
            # Writable first: the candidate holds every transaction up to P and the old master refuses writes, so
            # nothing more arrives over its connection; cutting that connection (STOP SLAVE waits for its threads)
            # follows outside the window.
            promoting = True
            await candidate_driver.take_master_role(role, before=candidate_role)
            ctx.undo_with("settle", settle)  # from here the candidate may take writes
            await candidate_driver.set_read_only(False, confirm=False)
            unavailable = time.perf_counter() - window_started
            result.window_steps = window_shares(ctx.steps, unavailable, read_only_s)
            ctx.release_records()
            await routing.writer_arrived(ctx, candidate.info.id, master.info.id)
            step.detail = f"{candidate.info.label} is the master and writable" + role_taken(role, master.info.label)
    finally:
        ctx.release_records()
    async with ctx.step("candidate_leaves_old_master") as step:
        await candidate_driver.stop_replication(connection)
        await candidate_driver.remove_replication(connection)
        if await candidate_driver.set_read_only(False):  # read back, now that the window is over
            raise OperationFailed(f"{candidate.info.label} still reports read_only after read-only off")
        step.detail = (
            f"{candidate.info.label} no longer replicates from {master.info.label} (connection {connection!r} "
            "removed); read_only off confirmed"
        )
    if kept:  # a multi-source candidate (one master of several replaced): it keeps the other masters' domains
        async with ctx.step("candidate_keeps_connections") as step:
            await actions.restart_connections(candidate_driver, kept)
            # Its domains recorded for the replica guard while the operation holds the cluster: replicating and
            # writable, it would be made read-only once the operation ends.
            taken = new_master_domains(replaced_domains(master, candidate), candidate, kept)
            await record_writable(ctx, candidate.info.id, taken)
            step.detail = (
                f"{candidate.info.label} keeps replicating over {', '.join(map(repr, kept))}: writes to it must stay "
                f"in the domains {master.info.label} wrote, the others' domains are their masters'"
            ) + recorded_words(taken)
    result.unavailable_s = round(unavailable, 6)
    ctx.runner.metrics.switchover_unavailable_seconds.labels(ctx.type).observe(unavailable)
    await follow_new_master(ctx, candidate, [o.replica for o in others], [o.connection.name for o in others],
                            delayed={o.replica.info.id for o in others if delay_of(o)},
                            old_master=master, old_master_settings=old_master_settings,
                            old_master_connection=connection, plan=switch, observed=observed)  # fmt: skip


def catch_up_figures(predicted: Prediction, max_window_s: float, waited_s: float | None) -> CatchUpPhase:
    """A prediction as the result keeps it."""
    return CatchUpPhase(
        waited_s=None if waited_s is None else round(waited_s, 6),
        max_window_s=max_window_s,
        predicted_catch_up_s=None if math.isinf(predicted.catch_up_s) else round(predicted.catch_up_s, 6),
        behind=predicted.behind,
        rates=[
            DomainRate(domain=d.domain, behind=d.behind, master_commits_per_s=round(d.commit_rate, 1),
                       candidate_applies_per_s=round(d.apply_rate, 1))
            for d in predicted.domains
        ],
    )  # fmt: skip


#: The steps between read-only on the old master and writes on the new one.
WINDOW_STEPS = ("old_master_read_only", "wait_in_flight_commits", "candidate_catch_up", "promote_candidate")


def window_shares(steps: Sequence[OperationStep], unavailable_s: float, read_only_s: float) -> dict[str, float]:
    """Each window step's seconds (the last of each name; the read-only step's part inside the window; the promotion
    still running is what remains), so a result says where its window went."""
    shares: dict[str, float] = {}
    for step in steps:
        if step.name in WINDOW_STEPS and step.duration_s is not None:
            shares[step.name] = step.duration_s
    shares["old_master_read_only"] = round(read_only_s, 6)
    if "promote_candidate" not in shares:
        shares["promote_candidate"] = round(max(0.0, unavailable_s - sum(shares.values())), 6)
    return shares


def role_taken(role: MasterRole, old_master: str) -> str:
    """The master-side settings a new master took, in words for its step (empty when the kind has none)."""
    if role.semi_sync is None:
        return ""
    if not role.semi_sync:
        return f"; semi-sync master off, as on {old_master}"
    return f"; semi-sync master on ({role.semi_sync_wait_point}, {role.semi_sync_timeout_ms} ms), as on {old_master}"


async def commits_landed(master: ServerView, settings: Settings) -> tuple[str, str]:
    """The read-only old master's binlog position once the client commits it admitted before read-only have landed,
    and how that is known: exactly, when its driver knows (ferryd counts commits in flight; MariaDB's read_only=1
    waits for them itself); else (a driver that cannot) once the position has stood still for `in_flight_quiet_ms`."""
    driver = master.require_driver()
    bound_s = settings.operations.in_flight_wait_max_s
    if driver.counts_commits_in_flight:
        try:
            stopped = await driver.wait_commits_landed(bound_s)
        except ServerConflict as e:
            raise OperationFailed(
                f"{master.info.label}: client writes did not stop within {bound_s} s of read-only on "
                f"({e.code}: {e.message})"
            ) from e
        if stopped.in_flight_at_read_only is None:
            return stopped.position, (
                f"read-only on waited for every commit in progress itself (read in {stopped.waited_s * 1000:.1f} ms): "
                f"P = {stopped.position}"
            )
        return stopped.position, (
            f"{stopped.in_flight_at_read_only} commit(s) in flight at read-only on, all landed after "
            f"{stopped.waited_s * 1000:.1f} ms: P = {stopped.position}"
        )
    target, settled = await actions.wait_quiet(driver, settings.operations.in_flight_quiet_ms / 1000, bound_s)
    if not settled:
        raise OperationFailed(
            f"{master.info.label}'s position kept moving for {bound_s} s after read-only on (commits still landing)"
        )
    return target, (
        f"position still for {settings.operations.in_flight_quiet_ms} ms "
        "(the server does not count commits in flight): "
        f"P = {target}"
    )


async def undo(ctx: OperationContext[Any, Any], observed: Observed, *, candidate_touched: bool) -> None:
    """The live run's undo of its recorded switch (`undo_switch`; `candidate_touched` once the candidate's promotion
    began), recorded as the `undo` step. Raises OperationFailed when a part could not be done."""
    switch = actions.switch_result(ctx).switch
    assert switch is not None
    async with ctx.step("undo", fenced=False) as step:
        put = await undo_switch(ctx, switch, observed, candidate_touched=candidate_touched)
        step.detail = {"done": put.done, "problems": put.problems}
        if put.problems:
            raise OperationFailed("; ".join(put.problems))


async def undo_switch(
    ctx: MoveContext,
    switch: MasterSwitch,
    observed: Observed,
    *,
    candidate_touched: bool = True,
) -> Settled:
    """The one undo of a master switch, live or after a crash (repairs.py), before its point of no return
    (no_return.decide). Unless the candidate is known untouched (`candidate_touched` False: a live run stopped
    before the promotion began; a reconcile cannot know, so it always does this part): the candidate read-only as it
    was, replicating from the old master again (its connection started, or re-created with the settings it had when
    the switch began) and its own master-side settings as the plan recorded them (`candidate_role`). Then the old
    master's read-only flag as it was and — writable again — back in service as the writer on every proxy, the
    candidate's sessions there ended when it was touched (it may have been put in service as the writer before the
    stop). Idempotent: what is as it was is left."""
    old, new = (
        observed.get(switch.old_master_registered_server_id),
        observed.get(switch.new_master_registered_server_id),
    )
    if old is None or new is None:
        return Settled([], ["the old master or the candidate is no longer registered"])
    connection = _switch_connection(new, switch.connection)
    if connection is None:
        return Settled([], [f"{new.info.label}: its connection {switch.connection!r} to the old master is unknown"])
    put = await put_back_servers(
        old, new, connection, master_was_read_only=switch.old_master_was_read_only,
        candidate_was_read_only=switch.candidate_was_read_only if candidate_touched else None,
        candidate_role=None if switch.candidate_role is None else MasterRole(**switch.candidate_role.model_dump()),
    )  # fmt: skip
    if not switch.old_master_was_read_only and put.master_restored:
        await routing.writer_arrived(ctx, old.info.id, new.info.id if candidate_touched else None)
    return Settled(put.done, put.problems)


def _switch_connection(candidate: ServerView, name: str) -> ReplicaConnection | None:
    """The candidate's connection to the old master as observed (a live run's preflight, or a reconcile's look)."""
    return next((c for c in (candidate.status.connections if candidate.status else ()) if c.name == name), None)


@dataclass(frozen=True)
class PutBack:
    """What `put_back_servers` did: in words, what it could not do, and whether the old master's read-only flag is as
    it was (then, when that is writable, it may be the proxies' writer again)."""

    done: list[str]
    problems: list[str]
    master_restored: bool


async def put_back_servers(
    master: ServerView,
    candidate: ServerView,
    connection: ReplicaConnection,
    *,
    master_was_read_only: bool,
    candidate_was_read_only: bool | None,
    candidate_role: MasterRole | None = None,
) -> PutBack:
    """The servers' part of undoing a switchover, live or after a crash (repairs.py): when the candidate's part
    had begun (`candidate_was_read_only` given), the candidate is read-only as it was, replicates from the old master
    again (its connection started, or re-created with `connection`'s settings when it was cut) and, with
    `candidate_role`, has its own master-side settings back; then the old master's read-only flag is as it was.
    Returns what was done, what could not be (each problem starts with the server's label) and whether the old
    master's flag was put back."""
    done: list[str] = []
    problems: list[str] = []
    master_restored = False
    if candidate_was_read_only is not None:
        try:
            driver = candidate.require_driver()
            await driver.set_read_only(candidate_was_read_only)
            await actions.ensure_connection(
                driver, connection.name, master.info.protocol_address or "", connection.settings
            )
            done.append(f"{candidate.info.label} replicates from {master.info.label} again")
            if candidate_role is not None:
                await driver.take_master_role(candidate_role)
                done.append(f"{candidate.info.label}'s master-side settings as they were")
        except DriverError as e:
            problems.append(f"{candidate.info.label}: {e}")
    try:
        await master.require_driver().set_read_only(master_was_read_only)
        done.append(f"{master.info.label} " + ("read-only as before" if master_was_read_only else "writable again"))
        master_restored = True
    except DriverError as e:
        problems.append(f"{master.info.label}: {e}")
    return PutBack(done, problems, master_restored)


async def follow_new_master(
    ctx: OperationContext[Any, Any],
    new_master: ServerView,
    replicas: list[ServerView],
    connections: list[str],
    *,
    old_master: ServerView | None,
    old_master_settings: ConnectionSettings | None = None,
    delayed: Collection[int] = (),
    old_master_connection: str | None = None,
    unreachable: Sequence[ServerView] = (),
    left_with_unreachable: Sequence[Link] = (),
    plan: object,
    observed: Observed,
) -> None:
    """Repoints the replicas (slave_pos; current_pos for one that was a master before, `logged_own_transactions`),
    makes the old master (when given) replicate with current_pos — with
    `old_master_settings` when given, else those of a connection of that name it has — and verifies that everyone
    replicates from the new master and converges: received it, for the `delayed` replicas (server ids), whose delay
    holds back what they apply. The old master replicates over `old_master_connection` — the name the cluster
    already uses (the candidate's connection to it), so an adopted cluster keeps its convention (MariaDB's default
    connection `''` stays the default) — else over `replication_connection_name`. The `unreachable` replicas (of
    the old master, not answering) cannot be repointed: the operation ends saying each is left behind, and so are the
    `left_with_unreachable` (the links of the servers replicating from one of them, down a chain). Until every
    move is made, a stop completes the move (`roll_forward`: the model's completion of `plan`, over `observed`)."""
    settings = ctx.settings
    address = new_master.info.protocol_address
    assert address is not None
    failures: list[str] = [
        f"{view.info.label}: not repointed to {new_master.info.label}: it did not answer ({view.error}), so whether "
        "it replicated from the old master could not be read; if it did, repoint it when it answers"
        for view in unreachable
    ] + [
        f"{link.replica.info.label}: replicates from {link.master.info.label}, which did not answer: left following "
        f"it, not repointed to {new_master.info.label}"
        for link in left_with_unreachable
    ]

    ctx.undo_with("roll_forward", partial(roll_forward, ctx, plan, observed))
    async with ctx.step("repoint_replicas") as step:
        moved = []
        for view, name in zip(replicas, connections, strict=True):
            try:
                driver = view.require_driver()
                use_gtid = "current_pos" if await logged_own_transactions(driver) else "slave_pos"
                await actions.repoint(driver, name, address, use_gtid)
                moved.append(view.info.label if use_gtid == "slave_pos" else f"{view.info.label} ({use_gtid})")
            except DriverError as e:
                failures.append(f"{view.info.label}: {e.code}: {e.message}")
        step.detail = {"repointed": moved, "failed": failures}
        if not replicas:
            step.skipped = True
    followers = list(replicas)
    if old_master is not None:
        async with ctx.step("old_master_replicates") as step:
            name = (
                settings.operations.replication_connection_name
                if old_master_connection is None
                else old_master_connection
            )
            try:
                driver = old_master.require_driver()
                exists = name in await actions.connection_names(driver)
                await actions.repoint(
                    driver, name, address, "current_pos", stop_first=exists, settings=old_master_settings
                )
                followers.append(old_master)
                step.detail = (
                    f"{old_master.info.label} replicates from {new_master.info.label} (current_pos, connection "
                    f"{name!r})"
                )
            except DriverError as e:
                failures.append(f"{old_master.info.label}: {e.code}: {e.message}")
                step.detail = f"{old_master.info.label} could not be repointed: {e}"
    ctx.undo_with(None)  # every move is made; verifying changes nothing
    async with ctx.step("verify") as step:
        target = position((await new_master.require_driver().positions()).binlog)
        lagging: dict[int, str] = {}
        problems = await actions.wait_replicating_from(
            followers, address, target, settings.operations.verify_timeout_s, received_only=delayed, lagging=lagging
        )
        labels = {v.info.id: v.info.label for v in followers}
        step.detail = {
            "target": str(target),
            "converged": [v.info.label for v in followers if v.info.id not in problems and v.info.id not in lagging],
            "following_behind": {labels[k]: v for k, v in lagging.items()},
            "problems": {labels[k]: v for k, v in problems.items()},
        }
        if problems or failures:
            left = [*failures, *(f"{labels[k]}: {v}" for k, v in problems.items())]
            raise OperationFailed(
                f"{new_master.info.label} is the master, but not every server follows it: " + "; ".join(left),
                changed=True,
                left=left,
            )


async def roll_forward(ctx: OperationContext[Any, Any], plan: object, observed: Observed) -> str:
    """The live run's compensation once its move passed the point of no return: the model's completion
    (`moves.complete`: a master switch's or a failover's), recorded as the `roll_forward` step. Returns what it did;
    raises OperationFailed naming what it could not do."""
    return await moves.as_step(ctx, "roll_forward", partial(moves.complete, ctx, plan, observed))


async def complete_switch(ctx: MoveContext, switch: MasterSwitch, observed: Observed) -> Settled:
    """The one completion of a master switch, live or after a crash (repairs.py), past its point of no return:
    `complete_move` over the recorded others (those still registered and not in maintenance), the old master
    following the new one over the candidate's connection name with that connection's settings (less its delay and
    filters) when they are observed; a multi-source new master's writable domains recorded (writable.py: a stop or a
    crash may have come between the promotion and the live run's record); then the new master, writable, in service
    as the writer on every proxy (a crash may have come before the promotion told them)."""
    old, new = (
        observed.get(switch.old_master_registered_server_id),
        observed.get(switch.new_master_registered_server_id),
    )
    if old is None or new is None:
        return Settled([], ["the old master or the candidate is no longer registered"])
    others: list[tuple[ServerView, str]] = []
    for other in switch.others:
        view = observed.get(other.registered_server_id)
        if view is not None and not view.info.maintenance:
            others.append((view, other.connection))
    connection = _switch_connection(new, switch.connection)
    follower = None if connection is None else connection.settings
    completed = await complete_move(
        ctx.settings, new, others, old, None if follower is None else replace(follower, delay_s=0, filters={}),
        switch.connection, keeps=switch.candidate_keeps,
    )  # fmt: skip
    done, problems = completed.done, completed.problems
    if completed.writable and switch.candidate_keeps:  # as the live run's `candidate_keeps_connections` records them
        taken = new_master_domains(replaced_domains(old, new), new, switch.candidate_keeps)
        recorded, not_recorded = await record_completed(ctx, new, taken)
        done, problems = [*done, *recorded], [*problems, *not_recorded]
    if completed.writable:
        await routing.writer_arrived(ctx, new.info.id, old.info.id)
    return Settled(done, problems)


@dataclass(frozen=True)
class Completed:
    """What `complete_move` did, what it could not do, and whether the new master is writable."""

    done: list[str]
    problems: list[str]
    writable: bool


async def complete_move(
    settings: Settings,
    new_master: ServerView,
    replicas: list[tuple[ServerView, str]],
    old_master: ServerView | None,
    old_master_settings: ConnectionSettings | None = None,
    old_master_connection: str | None = None,
    *,
    keeps: Sequence[str] = (),
) -> Completed:
    """Completes a master move past its point of no return (the new master took writes): the new master's
    connections to the old master, when any is left, removed; the new master writable,
    each given replica (and connection name) not yet replicating from it repointed (slave_pos, keeping its
    connection's settings — current_pos for a replica that was a master before, see `logged_own_transactions`),
    and the old master, when given, read-only and replicating from it (current_pos, with `old_master_settings` when
    given); a multi-source new master's `keeps` (its connections to the other masters) running. Returns what was
    done and what could not be."""
    address = new_master.info.protocol_address
    assert address is not None
    done: list[str] = []
    problems: list[str] = []
    writable = False
    try:
        driver = new_master.require_driver()
        connections = await driver.replica_connections() if old_master is not None or keeps else ()
        if old_master is not None:  # a switchover cuts it after making the new master writable: it may be left
            for c in connections:
                if c.master_address == old_master.info.protocol_address:
                    if c.running:
                        await driver.stop_replication(c.name)
                    await driver.remove_replication(c.name)
                    done.append(f"{new_master.info.label}'s connection {c.name!r} to {old_master.info.label} removed")
        if await driver.set_read_only(False):
            problems.append(f"{new_master.info.label} still reports read_only")
        else:
            done.append(f"{new_master.info.label} writable")
            writable = True
        if keeps:  # the other masters' connections, as read before (removing the old master's leaves them be)
            running = {c.name: c.running for c in connections}
            for name in keeps:
                if name in running and not running[name]:
                    await driver.start_replication(name)
                    done.append(f"{new_master.info.label}'s connection {name!r} started again")
    except DriverError as e:
        problems.append(f"{new_master.info.label}: {e}")
    followers = list(replicas)
    if old_master is not None:
        name = (
            settings.operations.replication_connection_name if old_master_connection is None else old_master_connection
        )
        followers.append((old_master, name))
    for view, name in followers:
        is_old = view is old_master
        try:
            driver = view.require_driver()
            if is_old:
                await driver.set_read_only(True)
            current = {c.name: c for c in await driver.replica_connections()}
            already = current.get(name)
            if already is not None and already.master_address == address and already.running:
                done.append(f"{view.info.label} already replicates from {new_master.info.label}")
                continue
            use_gtid = "current_pos" if is_old or await logged_own_transactions(driver) else "slave_pos"
            await actions.repoint(
                driver, name, address, use_gtid, stop_first=already is not None,
                settings=old_master_settings if is_old else None,
            )  # fmt: skip
            done.append(f"{view.info.label} repointed to {new_master.info.label} ({use_gtid})")
        except DriverError as e:
            problems.append(f"{view.info.label}: {e}")
    return Completed(done, problems, writable)


async def logged_own_transactions(driver: ServerDriver) -> bool:
    """Whether the server's newest transaction in some domain is one it logged itself rather than applied as a
    replica (gtid_current_pos differs from gtid_slave_pos there): a replica that was a master earlier. Started from
    its slave_pos it would be sent those transactions again and stop (strict mode: not above what it has), so it
    replicates from its current_pos (the preflight has refused any errant transaction of a replica)."""
    positions = await driver.positions()
    return position(positions.current) != position(positions.slave)
