"""What a move of the master role does to the change consumers of the servers it moves, as its plan says before
anything moves — a switchover's (switch_plan.py), a failover's and a failover drill's (failover.replace_master,
failover_drill.preflight). From the snapshot's statuses, so only the consumers connected now are known, and a server
cannot tell a consumer that follows the master (ferry_client's MasterSubscription, ferry-binlog --follow, the Python
MasterSubscription: they move to the new master by themselves, from their own position, once they see the old one is
no longer writable) from one subscribed to that server alone. The words say both.

A switchover ends no stream: the old master stays up as a replica of the candidate, so a consumer pinned to it goes on
receiving everything — what the candidate commits, once the old master has replicated it — and consumers of the
candidate and of the repointed replicas go on as before. A failover fences the old master (read-only, replicating
from nobody): a consumer pinned to it receives nothing new until it rejoins as a replica of the new master (a drill
rejoins it at once; a failover leaves that to an operator). A lost master's consumers cannot be listed at all, and
the plan says so instead of listing none; and a consumer that received a transaction the failover loses (semi-sync
fallen back, or none) is refused when it subscribes to the new master, naming the domain, never given a gap."""

from __future__ import annotations

from typing import Literal

from ferry_control.schemas.consumer import PlanConsumer
from ferry_control.services.orchestrator.snapshot import ServerView

#: The move whose plan names the consumers: a switchover, a failover of a lost (or failed) master, a failover drill
#: (the master fenced alive, then rejoined as a replica of the new one).
Move = Literal["switchover", "failover", "failover_drill"]


def _source_fate(move: Move, src: str, cand: str) -> str:
    follows = f"follows the master: moves to {cand} from its own position once it sees {src} read-only; "
    if move == "switchover":
        return follows + f"subscribed to {src} alone: goes on there, {src} replicating {cand}'s commits to it"
    if move == "failover_drill":
        return follows + (
            f"subscribed to {src} alone: receives nothing new while {src} is fenced, then {cand}'s commits once "
            f"{src} rejoins as its replica"
        )
    return follows + (
        f"subscribed to {src} alone: receives nothing new, {src} fenced and replicating from nobody until an operator "
        f"rejoins it as a replica of {cand}"
    )


def _lost_source(src: str, cand: str, error: str | None) -> str:
    return (
        f"{src} does not answer ({error or 'no status'}): its consumers cannot be listed, so none listed here does "
        f"not mean none. One that follows the master moves to {cand} from its own position once it finds {cand} "
        f"writable; one subscribed to {src} alone receives nothing until {src} answers again and rejoins as a "
        f"replica of {cand}."
    )


def plan_consumers(
    source: ServerView, candidate: ServerView, others: list[ServerView], move: Move = "switchover"
) -> tuple[list[PlanConsumer], str]:
    """Each consumer connected to a server of the move with what happens to its stream, and a note on what the
    servers cannot know (or why a server's consumers are not known — a lost master's said plainly)."""
    src, cand = source.info.label, candidate.info.label
    fates = {
        source.info.id: _source_fate(move, src, cand),
        candidate.info.id: f"unchanged: {cand} becomes the master",
        **{o.info.id: f"unchanged: {o.info.label} replicates from {cand} afterwards" for o in others},
    }
    listed: list[PlanConsumer] = []
    unknown: list[str] = []
    lost_source = move != "switchover" and source.status is None
    for view in [source, candidate, *others]:
        if view.status is None:
            if view is not source or not lost_source:
                unknown.append(f"{view.info.label} (not reachable: {view.error})")
            continue
        if view.status.consumers is None:
            unknown.append(f"{view.info.label} (its kind lists binlog readers among its replicas)")
            continue
        listed += [
            PlanConsumer(
                server=view.info.label,
                name=c.name,
                address=c.address,
                position=c.position,
                afterwards=fates[view.info.id],
            )  # fmt: skip
            for c in view.status.consumers
        ]
    note = (
        "Only the consumers connected now are known, and a server cannot tell one that follows the master (it moves "
        f"to {cand} by itself) from one subscribed to it alone."
    )
    if lost_source:
        note = _lost_source(src, cand, source.error) + " " + note
    if move == "failover":
        note += (
            f" A consumer that received a transaction {cand} lacks (one this failover may lose: without semi-sync, or "
            f"with it fallen back) is refused when it subscribes to {cand} (REPLICA_AHEAD or DIVERGED, naming the "
            "domain), never given a gap; under semi-sync a consumer is sent only what a replica confirmed."
        )
    if unknown:
        note += f" Consumers not known: {'; '.join(unknown)}."
    return listed, note
