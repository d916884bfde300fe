"""Failover of a lost intermediate master (orchestrator's DeadIntermediateMaster): a hub — a server with incoming
connections of its own and replicas below it, the two-master shape's server 3 — no longer answers.

Confirmed like a lost master (`failover.confirm_master_lost`: no replica still replicates from it; when automatic, a
replica says it lost it) and, besides, by its own masters: none of them still sends to it. Its incoming connections
are read from what the collector last stored (the hub cannot be asked): their names and masters. The candidates
(the candidate rules of `candidates`) apply what they received; the new hub is the one ahead of the others in every
domain, else the least behind — it needs no peer to lend it anything, because it takes the lost hub's connections
to its masters, which are alive, under the same names, from its own per-domain positions: each master sends it what
it lacks in that master's domains. A sibling is repointed under it only once it is at or ahead of that sibling in
every domain, so nothing a sibling applied is ever missing above it. The report names, per connection, the master
each domain came from and from which GTID to which. The lost hub is fenced (never repointed automatically; the
failover monitor keeps it read-only when it answers again). Nothing of the lost hub can be lost: every transaction
it had came from its masters, which still have it.

Each re-homed replica's replication gap is reported: from the collector's last sight of the hub to the moment it
replicated from a live master again (an upper bound)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.drivers.base import ChangeMaster
from ferry_control.drivers.errors import DriverError
from ferry_control.models import LinkSource
from ferry_control.repositories.links import LinkRepository
from ferry_control.schemas.operation import FailoverParams
from ferry_control.schemas.operation_results import (
    DomainOrigin,
    FailoverResult,
    HubFailoverPlan,
    LostReport,
    ServerConnection,
    StoredIncoming,
)
from ferry_control.services.orchestrator import actions, moves
from ferry_control.services.orchestrator.candidates import CandidatePool, choice_detail, choose_candidate, delay_of
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.fencing import fence, suspend_automatic_failover
from ferry_control.services.orchestrator.gtid import gtid_text, position
from ferry_control.services.orchestrator.hub_switchover import record_of, settings_of
from ferry_control.services.orchestrator.moves import MoveContext, Observed, Settled
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView


@dataclass(frozen=True)
class Incoming:
    """One of the lost hub's connections to its masters, as the collector last stored it."""

    name: str
    master_server_id: int
    master_address: str


async def stored_incoming(ctx: OperationContext[Any, Any], server_id: int) -> list[Incoming]:
    """The server's own connections to registered masters, as the collector last saw them (empty: not a hub)."""
    async with session_scope(ctx.sessionmaker) as session:
        links = await LinkRepository(session).list_for_cluster(ctx.cluster_id)
        return [
            Incoming(link.name or "", link.master_server_id, link.master_address or "")
            for link in links
            if link.replica_server_id == server_id and link.source == LinkSource.replica
            and link.master_server_id is not None and link.master_address
        ]  # fmt: skip


def masters_still_sending(snapshot: ClusterSnapshot, hub: ServerView, incoming: list[Incoming]) -> list[str]:
    """The hub's masters that still list it among the replicas they send to (by its reported server id)."""
    if hub.info.reported_server_id is None:
        return []
    sending = []
    for connection in incoming:
        master = snapshot.by_id.get(connection.master_server_id)
        if master is not None and master.status is not None:
            if any(r.server_id == hub.info.reported_server_id for r in master.status.replicas):
                sending.append(master.info.label)
    return sending


async def fail_over_hub(
    ctx: OperationContext[FailoverParams, FailoverResult],
    snapshot: ClusterSnapshot,
    hub: ServerView,
    incoming: list[Incoming],
    pool: CandidatePool,
) -> None:
    settings = ctx.settings
    async with ctx.step("confirm_masters_lost_it") as step:
        sending = masters_still_sending(snapshot, hub, incoming)
        masters = ", ".join(snapshot.label_of(c.master_server_id) for c in incoming)
        if sending and ctx.params.automatic:
            raise refused(
                f"failover refused, nothing was changed: {', '.join(sending)} still send(s) to {hub.info.label}: it "
                "may be alive and only the control plane lost it"
            )
        step.detail = (
            f"{hub.info.label}'s masters ({masters}) no longer send to it"
            if not sending
            else f"{', '.join(sending)} still list(s) {hub.info.label} among its replicas (a master notices a lost "
            "replica at its next send or heartbeat): the operator's decision stands"
        )
    for connection in incoming:
        master = snapshot.by_id.get(connection.master_server_id)
        if master is None or not master.healthy:
            raise refused(
                f"failover refused, nothing was changed: {hub.info.label}'s master "
                f"{snapshot.label_of(connection.master_server_id)} is not healthy either: fail that one over first"
            )
    async with ctx.step("drain_relay_logs") as step:
        drained = await actions.drain_relay_logs(pool.eligible, settings.failover.relay_drain_timeout_s)
        step.detail = {"drained": drained, "not_waited_for": pool.excluded}
    snapshot = await ctx.snapshot()
    links = snapshot.replicas_of(hub.info.id)
    eligible_ids = {link.replica.info.id for link in pool.eligible}
    candidates = [link for link in links if link.replica.info.id in eligible_ids]
    async with ctx.step("choose_candidate") as step:
        chosen, ahead, why = choose_candidate(candidates, links)
        if not ahead:
            why = why.replace("will be leveled from its peers", "gets what it lacks from the hub's masters")
        step.detail = choice_detail(chosen, why, links, candidates, pool.excluded)
    new_hub = chosen.replica
    ctx.result.new_master_registered_server_id = new_hub.info.id
    if ctx.dry_run:
        return
    siblings = [link for link in links if link is not chosen and not link.replica.info.maintenance
                and link.replica.reachable]  # fmt: skip
    await ctx.pre_hooks(old_master_registered_server_id=hub.info.id, new_master_registered_server_id=new_hub.info.id)
    # What a reconcile after a crash needs, before any server is changed.
    ctx.result.hub_failover = plan = HubFailoverPlan(
        hub_registered_server_id=hub.info.id,
        new_hub_registered_server_id=new_hub.info.id,
        new_hub_connection=chosen.connection.name,
        incoming=[StoredIncoming.model_validate(asdict(c)) for c in incoming],
        siblings=[
            ServerConnection(registered_server_id=s.replica.info.id, connection=s.connection.name) for s in siblings
        ],
        new_hub_settings=record_of(
            None if chosen.connection.settings is None else replace(chosen.connection.settings, delay_s=0, filters={})
        ),
    )
    await ctx.save()
    # From here a stop completes the move (the hub is lost: there is nothing to go back to).
    ctx.undo_with("roll_forward", partial(_roll_forward, ctx, plan, snapshot.by_id))
    lost_at = hub.info.last_seen_at
    gaps: dict[str, float | None] = {}
    driver = new_hub.require_driver()
    start = position((await driver.positions()).current)
    async with ctx.step("new_hub_takes_connections") as step:
        connection_settings = settings_of(plan.new_hub_settings)
        await driver.stop_replication(chosen.connection.name)
        await driver.remove_replication(chosen.connection.name)
        for connection in incoming:
            change = ChangeMaster(connection.master_address, use_gtid="slave_pos", settings=connection_settings)
            await driver.change_master(connection.name, change)
        for connection in incoming:
            await driver.start_replication(connection.name)
        gaps[new_hub.info.label] = _gap(lost_at)
        step.detail = (
            f"{new_hub.info.label} replicates "
            + ", ".join(f"{c.name!r} from {snapshot.label_of(c.master_server_id)}" for c in incoming)
            + f" from its own positions ({start})"
        )
    # From here the new hub may hold what no sibling has: the rest is completed, never undone.
    async with ctx.step("repoint_replicas") as step:
        address = new_hub.info.protocol_address
        assert address is not None
        moved: list[str] = []
        # Servers that do not answer (whom they replicate from cannot be read: maybe the lost hub) are left behind,
        # and said so when the operation ends.
        failed = [
            f"{view.info.label}: not repointed to {new_hub.info.label}: it did not answer ({view.error}), so whether "
            "it replicated from the lost hub could not be read; if it did, repoint it when it answers"
            for view in snapshot.views
            if not view.reachable and view.info.id not in (hub.info.id, new_hub.info.id) and not view.info.maintenance
        ]
        for sibling in siblings:
            target = str(sibling.replica.current)
            reached = await actions.wait_reached(driver, target, settings.operations.switchover_catch_up_timeout_s)
            if not reached.reached:
                failed.append(f"{sibling.replica.info.label}: {new_hub.info.label} did not reach {target} "
                              f"(it is at {reached.position}); left replicating from the lost hub")  # fmt: skip
                continue
            await actions.repoint(sibling.replica.require_driver(), sibling.connection.name, address, "slave_pos")
            gaps[sibling.replica.info.label] = _gap(lost_at)
            moved.append(sibling.replica.info.label)
        step.detail = {"repointed": moved, "failed": failed}
        step.skipped = not siblings
    ctx.result.replication_gaps_s = gaps
    async with ctx.step("fence_old_master") as step:
        await fence(ctx, hub, f"replaced by {new_hub.info.label} in failover operation {ctx.operation_id}")
        step.detail = f"{hub.info.label} is fenced: never repointed automatically"
    async with ctx.step("domains_report") as step:
        now = position((await driver.positions()).current)
        report = domains_report(snapshot, incoming, start, now)
        ctx.result.domains = report
        ctx.result.possibly_lost = LostReport(
            domains=[],
            note=f"nothing: every transaction {hub.info.label} had came from its masters, which still have it",
        )
        step.detail = [d.model_dump(mode="json") for d in report]
    await suspend_automatic_failover(ctx)
    ctx.undo_with(None)  # every move is made; verifying changes nothing
    async with ctx.step("verify") as step:
        followers = [s.replica for s in siblings if s.replica.info.label in moved]
        binlog_end = position((await driver.positions()).binlog)
        problems = await actions.wait_replicating_from(
            followers, address, binlog_end, settings.operations.verify_timeout_s,
            received_only={s.replica.info.id for s in siblings if delay_of(s)},
        )  # fmt: skip
        connections = {c.name: c for c in await driver.replica_connections()}
        for connection in incoming:
            found = connections.get(connection.name)
            if found is None or not found.running or found.last_error is not None:
                problems[new_hub.info.id] = f"connection {connection.name!r} does not run"
        step.detail = {"problems": {str(k): v for k, v in problems.items()}}
        if problems or failed:
            left = [*failed, *(f"{snapshot.label_of(k)}: {v}" for k, v in problems.items())]
            raise OperationFailed(
                f"{new_hub.info.label} replaced {hub.info.label}, but not everything replicates: " + "; ".join(left),
                changed=True,
                left=left,
            )


async def complete_hub_failover(ctx: MoveContext, plan: HubFailoverPlan, observed: Observed) -> Settled:
    """The one completion of a hub failover once its plan was saved, live (its guard's roll forward) or after a crash
    (repairs.py) — the hub is lost, so there is nothing to go back to: the new hub without its connection to the lost
    hub and with each of the lost hub's connections, running, with the settings the live run gave them
    (`new_hub_settings`); every sibling (not in maintenance) still pointed at the lost hub replicating from the new
    hub once the new hub is at or ahead of it in every domain (else left, and named), one already pointed at it but
    stopped started; a server that could not be read named; the lost hub fenced (read-only now if it answers, and
    whenever it answers again)."""
    new_hub = observed.get(plan.new_hub_registered_server_id)
    hub = observed.get(plan.hub_registered_server_id)
    done: list[str] = []
    problems: list[str] = []
    if new_hub is None or hub is None:
        return Settled(done, ["the lost hub or its successor is no longer registered"])
    if new_hub.status is None:
        return Settled(done, [
            f"{new_hub.info.label} (the new hub) does not answer ({new_hub.error}): it and the lost hub's replicas are "
            "left as they are, for an operator once it answers"
        ])  # fmt: skip
    try:
        driver = new_hub.require_driver()
        existing = {c.name: c for c in await driver.replica_connections()}
        incoming = [Incoming(c.name, c.master_registered_server_id, c.master_address) for c in plan.incoming]
        names = {c.name for c in incoming}
        old = existing.get(plan.new_hub_connection)
        if old is not None and old.master_address == hub.info.protocol_address and old.name not in names:
            await driver.stop_replication(old.name)
            await driver.remove_replication(old.name)
        for connection in incoming:
            if did := await actions.ensure_connection(
                driver, connection.name, connection.master_address, settings_of(plan.new_hub_settings)
            ):
                done.append(f"{new_hub.info.label} {did}")
    except DriverError as e:
        return Settled(done, [f"{new_hub.info.label}: {e}"])
    address = new_hub.info.protocol_address
    assert address is not None
    timeout_s = ctx.settings.operations.switchover_catch_up_timeout_s
    for sibling in plan.siblings:
        view, name = observed.get(sibling.registered_server_id), sibling.connection
        if view is None or view.status is None or view.info.maintenance:
            continue
        try:
            sibling_driver = view.require_driver()
            current = next((c for c in await sibling_driver.replica_connections() if c.name == name), None)
            if current is not None and current.master_address == address and not current.running:
                # Repointed, and the answer to its start lost.
                await sibling_driver.start_replication(name)
                done.append(f"{view.info.label}: connection {name!r} to {new_hub.info.label} started")
                continue
            if current is None or current.master_address != hub.info.protocol_address:
                continue
            target = str(position((await sibling_driver.positions()).current))
            reached = await actions.wait_reached(driver, target, timeout_s)
            if not reached.reached:
                problems.append(f"{view.info.label}: {new_hub.info.label} did not reach {target} (it is at "
                                f"{reached.position}); left replicating from the lost hub")  # fmt: skip
                continue
            await actions.repoint(sibling_driver, name, address, "slave_pos")
            done.append(f"{view.info.label} replicates from {new_hub.info.label}")
        except DriverError as e:
            problems.append(f"{view.info.label}: {e}")
    for view in observed.values():
        if view.status is None and view.info.id not in (hub.info.id, new_hub.info.id) and not view.info.maintenance:
            problems.append(
                f"{view.info.label}: its replication could not be read ({view.error}): not repointed to "
                f"{new_hub.info.label} — repoint it once it answers, if it replicated from the lost hub"
            )
    await fence(ctx, hub, f"replaced by {new_hub.info.label} in a failover")
    done.append(f"{hub.info.label} fenced")
    return Settled(done, problems)


async def _roll_forward(ctx: OperationContext[Any, Any], plan: HubFailoverPlan, observed: Observed) -> str:
    """The live run's compensation once its plan was saved: `complete_hub_failover`, recorded as a step."""
    return await moves.as_step(ctx, "roll_forward", partial(complete_hub_failover, ctx, plan, observed))


def domains_report(snapshot: ClusterSnapshot, incoming: list[Incoming], start: Any, now: Any) -> list[DomainOrigin]:
    """Per domain the new hub has now: which of the lost hub's masters it came from (the one whose binlog has
    the domain), from which GTID (the new hub's own when it took over; None: it had none) up to which."""
    origins: dict[int, str] = {}
    for connection in incoming:
        master = snapshot.by_id.get(connection.master_server_id)
        if master is not None and master.status is not None:
            for gtid in master.binlog:
                origins.setdefault(gtid.domain, f"{master.info.label} over {connection.name!r}")
    report = []
    for gtid in now:
        before = start.get(gtid.domain)
        report.append(
            DomainOrigin(
                domain=gtid.domain,
                from_=origins.get(gtid.domain, "its own binlog"),
                from_gtid=None if before is None else gtid_text(before),
                up_to=gtid_text(gtid),
            )
        )
    return report


def _gap(lost_at: datetime | None) -> float | None:
    """Seconds since the collector last saw the lost hub answer (None: never)."""
    return None if lost_at is None else round((datetime.now(UTC) - lost_at).total_seconds(), 3)
