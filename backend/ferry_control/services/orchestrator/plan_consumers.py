"""What a switchover does to the change consumers of the servers it moves, as its plan says before anything moves —
from the snapshot's statuses, so only the consumers connected now are known, and a server cannot tell a consumer that
follows the master (ferry_client's MasterSubscription, ferry-binlog --follow, the Python MasterSubscription: they
move to the new master by themselves, from their own position, once they see the old one is no longer writable) from
one subscribed to that server alone. The words say both.

A switchover ends no stream: the old master stays up as a replica of the candidate, so a consumer pinned to it goes on
receiving everything — what the candidate commits, once the old master has replicated it — and consumers of the
candidate and of the repointed replicas go on as before."""

from __future__ import annotations

from ferry_control.schemas.consumer import PlanConsumer
from ferry_control.services.orchestrator.snapshot import ServerView


def plan_consumers(
    source: ServerView, candidate: ServerView, others: list[ServerView]
) -> tuple[list[PlanConsumer], str]:
    """Each consumer connected to a server of the move with what happens to its stream, and a note on what the
    servers cannot know (or why a server's consumers are not known)."""
    src, cand = source.info.label, candidate.info.label
    fates = {
        source.info.id: (
            f"follows the master: moves to {cand} from its own position once it sees {src} read-only; "
            f"subscribed to {src} alone: goes on there, {src} replicating {cand}'s commits to it"
        ),
        candidate.info.id: f"unchanged: {cand} becomes the master",
        **{o.info.id: f"unchanged: {o.info.label} replicates from {cand} afterwards" for o in others},
    }
    listed: list[PlanConsumer] = []
    unknown: list[str] = []
    for view in [source, candidate, *others]:
        if view.status is None:
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
    if unknown:
        note += f" Consumers not known: {'; '.join(unknown)}."
    return listed, note
