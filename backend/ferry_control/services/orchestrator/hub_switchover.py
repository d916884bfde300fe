"""Planned switchover of an intermediate master (a hub: a server with incoming connections of its own and replicas
below it — the two-master shape's server 3, a multi-source replica of masters 1 and 2 with servers 4 and 5 below it).

The masters above keep taking writes throughout; nothing is made read-only. The hub's incoming connections stop, so
its position H stands still; the candidate (one of its replicas) applies up to H in every domain; it then takes over
each of the hub's incoming connections under the same name, with the connection's settings (parallel apply, semi-sync
replica side, heartbeat — not its delay or filters: the hub's connections are removed, and neither is carried over),
starting from its own per-domain positions (slave_pos), so every master sends it what it lacks in that master's
domains. The hub's other replicas (keeping their own connection's settings) and the hub itself (with the candidate's
connection's settings, less its delay and filters) then replicate from the candidate, over the connection name the
cluster uses; the dry run's plan lists what each moved connection carries (switch_plan.py). Until the
candidate's new connections start, any end but success undoes (the hub's connections run again, the candidate
replicates from the hub as before); once one has started, the rest is completed instead. The plan is kept in the
operation's result (`hub_switch`) before the first move, for a reconcile after a crash.

Each moved server's replication gap — the time it had no running connection to a master — is measured and reported
(`replication_gaps_s`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from functools import partial
from typing import Any

from ferry_control.core.naming import connection_label
from ferry_control.drivers.base import ChangeMaster, ConnectionSettings, IoState, ReplicaConnection
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation_results import (
    ConnectionSettingsRecord,
    HubIncoming,
    HubSwitchPlan,
    ServerConnection,
)
from ferry_control.services.orchestrator import actions, moves
from ferry_control.services.orchestrator.candidates import delay_of
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.moves import MoveContext, Observed, Settled
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView


def settings_of(value: ConnectionSettingsRecord | None) -> ConnectionSettings | None:
    """A connection's settings as the plan kept them, for the driver."""
    return None if value is None else ConnectionSettings(**value.model_dump())


def record_of(settings: ConnectionSettings | None) -> ConnectionSettingsRecord | None:
    """A connection's settings as the driver reported them, for the plan."""
    return None if settings is None else ConnectionSettingsRecord.model_validate(asdict(settings))


async def switch_hub(
    ctx: OperationContext[Any, Any],
    snapshot: ClusterSnapshot,
    hub: ServerView,
    link: Link,
    others: list[Link],
) -> None:
    result = actions.switch_result(ctx)
    candidate = link.replica
    hub_driver, candidate_driver = hub.require_driver(), candidate.require_driver()
    incoming = snapshot.links_of(hub.info.id)
    # What a reconcile after a crash needs, in the database before any server is changed.
    plan = HubSwitchPlan(
        hub_registered_server_id=hub.info.id,
        candidate_registered_server_id=candidate.info.id,
        candidate_connection=link.connection.name,
        candidate_settings=record_of(link.connection.settings),
        incoming=[
            HubIncoming(
                name=c.connection.name,
                master_registered_server_id=c.master.info.id,
                master_address=c.connection.master_address,
                running=c.connection.running,
                # The connection's settings move with it, less its delay and filters (switch_plan says so).
                settings=record_of(
                    None if c.connection.settings is None else replace(c.connection.settings, delay_s=0, filters={})
                ),
            )
            for c in incoming
        ],
        others=[ServerConnection(registered_server_id=o.replica.info.id, connection=o.connection.name) for o in others],
    )
    result.hub_switch = plan
    await ctx.save()
    gaps: dict[str, float] = {}
    stopped_at: dict[str, float] = {}
    observed = snapshot.by_id
    ctx.undo_with("undo", partial(_undo, ctx, plan, observed))
    async with ctx.step("hub_stops_receiving") as step:
        for c in incoming:
            await hub_driver.stop_replication(c.connection.name)
        stopped_at[hub.info.label] = time.perf_counter()
        target = (await hub_driver.positions()).current
        step.detail = (
            f"{hub.info.label} stopped {', '.join(connection_label(c.connection.name) for c in incoming)} at "
            f"{target}; its masters keep taking writes"
        )
    result.position = target
    await actions.candidate_catch_up(ctx, candidate, target, link.connection.name)
    async with ctx.step("candidate_takes_connections") as step:
        # From here a stop completes or undoes as the candidate's connections say (`taken_over`).
        ctx.undo_with("settle", partial(_settle, ctx, plan, observed))
        await candidate_driver.stop_replication(link.connection.name)
        stopped_at[candidate.info.label] = time.perf_counter()
        # Every connection is made before any starts: server-wide settings (parallel workers) change only while
        # every connection of the server is stopped.
        for source in plan.incoming:
            change = ChangeMaster(source.master_address, use_gtid="slave_pos", settings=settings_of(source.settings))
            await candidate_driver.change_master(source.name, change)
        taken = []
        # From here the candidate has the hub's connections (and may apply what the hub never had): completed.
        ctx.undo_with("roll_forward", partial(roll_forward, ctx, plan, observed))
        for source in plan.incoming:
            await candidate_driver.start_replication(source.name)
            taken.append(
                f"{connection_label(source.name)} from {snapshot.view(source.master_registered_server_id).info.label}"
            )
        gaps[candidate.info.label] = round(time.perf_counter() - stopped_at[candidate.info.label], 6)
        if link.connection.name not in {c.name for c in plan.incoming}:  # else the change above replaced it
            await candidate_driver.remove_replication(link.connection.name)
        step.detail = f"{candidate.info.label} replicates {', '.join(taken)} from its own positions"
    async with ctx.step("repoint_replicas") as step:
        moved = []
        for other in others:
            began = time.perf_counter()
            await actions.repoint(other.replica.require_driver(), other.connection.name,
                                  _address(candidate), "slave_pos")  # fmt: skip
            gaps[other.replica.info.label] = round(time.perf_counter() - began, 6)
            moved.append(other.replica.info.label)
        step.detail = {"repointed": moved}
        step.skipped = not others
    async with ctx.step("hub_replicates") as step:
        await _hub_under_candidate(hub_driver, candidate, plan)
        gaps[hub.info.label] = round(time.perf_counter() - stopped_at[hub.info.label], 6)
        over = connection_label(link.connection.name)
        step.detail = f"{hub.info.label} replicates from {candidate.info.label} over {over}"
    result.replication_gaps_s = dict(gaps)
    ctx.undo_with(None)  # every move is made; verifying changes nothing
    async with ctx.step("verify") as step:
        problems = await verify(ctx, snapshot, plan, [o.replica for o in others if not delay_of(o)],
                                [o.replica for o in others if delay_of(o)])  # fmt: skip
        step.detail = {"problems": problems}
        if problems:
            raise OperationFailed(
                f"{candidate.info.label} took over from {hub.info.label}, but not everything replicates: "
                + "; ".join(problems),
                changed=True,
                left=problems,
            )


def _address(view: ServerView) -> str:
    address = view.info.protocol_address
    if address is None:
        raise OperationFailed(f"{view.info.label} has no protocol address to replicate from")
    return address


async def _hub_under_candidate(hub_driver: Any, candidate: ServerView, plan: HubSwitchPlan) -> None:
    """The hub's incoming connections removed; it replicates from the candidate over the candidate's old
    connection name (the cluster's convention), with that connection's settings less its delay and filters."""
    names = await actions.connection_names(hub_driver)
    for c in plan.incoming:
        if c.name in names:
            await hub_driver.stop_replication(c.name)
            await hub_driver.remove_replication(c.name)
    follower = settings_of(plan.candidate_settings)
    name = plan.candidate_connection
    # Of the same name as one of its incoming connections (MariaDB's default '' on both sides), it was removed above.
    kept = name in names and name not in {c.name for c in plan.incoming}
    await actions.repoint(hub_driver, name, _address(candidate), "slave_pos", stop_first=kept,
                          settings=None if follower is None else replace(follower, delay_s=0, filters={}))  # fmt: skip


async def verify(
    ctx: OperationContext[Any, Any],
    snapshot: ClusterSnapshot,
    plan: HubSwitchPlan,
    followers: list[ServerView],
    delayed: list[ServerView],
) -> list[str]:
    """The candidate's connections to the hub's masters run; the hub and its former replicas replicate from the
    candidate and reach what it had when the moves ended (received, for a delayed replica)."""
    candidate = snapshot.view(plan.candidate_registered_server_id)
    hub = snapshot.view(plan.hub_registered_server_id)
    problems = []
    driver = candidate.require_driver()
    connections = {c.name: c for c in await driver.replica_connections()}
    for c in plan.incoming:
        found = connections.get(c.name)
        if found is None or not found.running or found.last_error is not None:
            state = "missing" if found is None else f"io {found.io_state.value}, sql {found.sql_state.value}"
            problems.append(f"{candidate.info.label}: connection {c.name!r} does not run ({state})")
        elif c.running and found.io_state not in (IoState.connected, IoState.connecting):
            problems.append(f"{candidate.info.label}: connection {c.name!r} is {found.io_state.value}")
    target = position((await driver.positions()).binlog)
    waited = await actions.wait_replicating_from(
        [*followers, *delayed, hub],
        _address(candidate),
        target,
        ctx.settings.operations.verify_timeout_s,
        received_only={v.info.id for v in delayed},
    )
    labels = {v.info.id: v.info.label for v in [*followers, *delayed, hub]}
    problems += [f"{labels[server_id]}: {why}" for server_id, why in waited.items()]
    return problems


def taken_over(connections: Sequence[ReplicaConnection], plan: HubSwitchPlan) -> bool:
    """A hub switchover's point of no return, judged from the candidate's connections (live, and by the reconcile
    after a crash): passed once the candidate has one of the hub's incoming connections (under its name, to its
    master) — made, whether or not it started (a lost answer to a start says nothing of whether it ran). Before,
    nothing of the hub's masters reached the candidate: undone; after, completed (it may hold what the hub lacks,
    and completing only adds the moves not made yet)."""
    made = {(c.name, c.master_address) for c in connections}
    return any((c.name, c.master_address) in made for c in plan.incoming)


async def _undo(ctx: OperationContext[Any, Any], plan: HubSwitchPlan, observed: Observed) -> str:
    """The live run's undo before the candidate took a connection (`undo_hub_move`)."""
    settled = await undo_hub_move(ctx, plan, observed)
    if settled.problems:
        raise OperationFailed("; ".join(settled.problems))
    return "; ".join(settled.done)


async def _settle(ctx: OperationContext[Any, Any], plan: HubSwitchPlan, observed: Observed) -> str:
    """The live run's compensation while the candidate takes the hub's connections: completed or undone as
    `taken_over` says of the candidate read now (unreadable: left as it is, for a reconcile or an operator)."""
    candidate = observed[plan.candidate_registered_server_id]
    async with ctx.step("settle", fenced=False) as step:
        try:
            connections = await candidate.require_driver().replica_connections()
        except DriverError as e:
            step.detail = f"{candidate.info.label} could not be read ({e.code}: {e.message})"
            hub = observed[plan.hub_registered_server_id]
            raise OperationFailed(
                f"{step.detail}: whether it took over is unknown, so the servers are left as they are — "
                f"{hub.info.label} with its connections to its masters stopped, its replicas waiting: a reconcile or "
                "an operator must decide"
            ) from e
        taken = taken_over(connections, plan)
        step.detail = f"{candidate.info.label} " + (
            "has the hub's connections: completed" if taken else "has none of the hub's connections: undone"
        )
    if taken:
        return await roll_forward(ctx, plan, observed)
    return await moves.as_step(ctx, "undo", partial(undo_hub_move, ctx, plan, observed))


async def roll_forward(ctx: OperationContext[Any, Any], plan: HubSwitchPlan, observed: Observed) -> str:
    """The compensation once the candidate took over a connection: `complete_hub_move`, recorded as a step."""
    return await moves.as_step(ctx, "roll_forward", partial(complete_hub_move, ctx, plan, observed))


async def complete_hub_move(ctx: MoveContext, plan: HubSwitchPlan, observed: Observed) -> Settled:
    """The one completion of a hub switchover past `taken_over`, live or after a crash (repairs.py): every move not
    made yet, each at most once: the candidate has and runs each of the hub's incoming connections and no longer the
    one to the hub; the hub's other replicas (not in maintenance) and the hub replicate from the candidate — also when
    the candidate could not be read or changed (named: it may not run every connection yet), since it took over."""
    candidate, hub = observed.get(plan.candidate_registered_server_id), observed.get(plan.hub_registered_server_id)
    if candidate is None or hub is None:
        return Settled([], ["the hub or the candidate is no longer registered"])
    address = _address(candidate)
    done: list[str] = []
    problems: list[str] = []
    try:
        driver = candidate.require_driver()
        existing = {c.name: c for c in await driver.replica_connections()}
        for c in plan.incoming:
            if did := await actions.ensure_connection(driver, c.name, c.master_address, settings_of(c.settings)):
                done.append(f"{candidate.info.label} {did}")
        if plan.candidate_connection in existing and plan.candidate_connection not in {c.name for c in plan.incoming}:
            await driver.stop_replication(plan.candidate_connection)
            await driver.remove_replication(plan.candidate_connection)
            done.append(f"{candidate.info.label} no longer replicates from {hub.info.label}")
    except DriverError as e:
        # The others still follow it: it has (some of) the hub's connections, and replicas reach it whether or not
        # the control plane does; what it could not do is named.
        problems.append(f"{candidate.info.label}: {e}")
    for other in plan.others:
        view, name = observed.get(other.registered_server_id), other.connection
        if view is None or view.info.maintenance:
            continue
        try:
            other_driver = view.require_driver()
            # Repointed if it is not yet, started if it is but stopped (a lost answer to its start).
            if did := await actions.ensure_connection(other_driver, name, address):
                done.append(f"{view.info.label} {did}")
        except DriverError as e:
            problems.append(f"{view.info.label}: {e}")
    try:
        hub_driver = hub.require_driver()
        hub_connections = {c.name: c for c in await hub_driver.replica_connections()}
        mine = hub_connections.get(plan.candidate_connection)
        # Its incoming connections left (one of the same name as its connection to the candidate is that one).
        left = [
            c.name for c in plan.incoming
            if c.name in hub_connections and hub_connections[c.name].master_address != address
        ]  # fmt: skip
        if mine is None or mine.master_address != address or left:
            await _hub_under_candidate(hub_driver, candidate, plan)
            done.append(f"{hub.info.label} replicates from {candidate.info.label}")
        elif not mine.running:  # repointed, and the answer to its start lost
            await hub_driver.start_replication(mine.name)
            done.append(f"{hub.info.label}: connection {mine.name!r} to {candidate.info.label} started")
    except DriverError as e:
        problems.append(f"{hub.info.label}: {e}")
    return Settled(done, problems)


async def undo_hub_move(ctx: MoveContext, plan: HubSwitchPlan, observed: Observed) -> Settled:
    """The one undo of a hub switchover before `taken_over`, live or after a crash (repairs.py): the candidate
    replicates from the hub as before (its connection re-created with its settings if it was removed, any half-made
    new one removed), and the hub's incoming connections that ran run again."""
    candidate, hub = observed.get(plan.candidate_registered_server_id), observed.get(plan.hub_registered_server_id)
    if candidate is None or hub is None:
        return Settled([], ["the hub or the candidate is no longer registered"])
    problems = []
    try:
        driver = candidate.require_driver()
        existing = {c.name: c for c in await driver.replica_connections()}
        for c in plan.incoming:
            if c.name in existing and c.name != plan.candidate_connection:
                await driver.stop_replication(c.name)
                await driver.remove_replication(c.name)
        name = plan.candidate_connection
        mine = existing.get(name)
        if mine is None:
            await actions.repoint(driver, name, _address(hub), "slave_pos", stop_first=False,
                                  settings=settings_of(plan.candidate_settings))  # fmt: skip
        elif not mine.running:
            await driver.start_replication(name)
    except DriverError as e:
        problems.append(f"{candidate.info.label}: {e}")
    try:
        hub_driver = hub.require_driver()
        current = {c.name: c for c in await hub_driver.replica_connections()}
        for c in plan.incoming:
            if c.running and c.name in current and not current[c.name].running:
                await hub_driver.start_replication(c.name)
    except DriverError as e:
        problems.append(f"{hub.info.label}: {e}")
    if problems:
        return Settled([], problems)
    again = f"{hub.info.label} receives from its masters again and {candidate.info.label} replicates from it as before"
    return Settled([again], [])
