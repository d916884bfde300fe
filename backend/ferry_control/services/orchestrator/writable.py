"""The domains a multi-source server writes once an operation made it the master of some domains while it keeps
replicating the others (one master of the two-master shape replaced by its multi-source replica): recorded as the
server's writable domains (`replica_guard.writable_domains`, `set_by` "operation N") while the operation still holds
the cluster (the guard acts on none of its servers then), so that the replica guard does not make the new master
read-only for replicating, its writes in those domains are not errant, and the topology raises no writable-replica
alert about it. The live run records them once the candidate is promoted, and the move's completion (moves.py) records
them too: an operation stopped between the promotion and its record — a stop, or a crash whose reconcile completes the
move — still leaves them recorded before it lets go of the cluster. A rejoin, which makes a server a plain replica
again, takes back what an operation recorded (an admin's setting stays)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ferry_control.core.db import session_scope
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.moves import MoveContext
from ferry_control.services.orchestrator.snapshot import ServerView
from ferry_control.services.writable_domains import WritableDomainsService

_SET_BY = "operation "


def new_master_domains(replaced: Iterable[int], candidate: ServerView, kept: Collection[str]) -> list[int]:
    """The domains the replaced master wrote (`replaced`: its binlog's, or what was heard of it) less those the
    candidate receives over its `kept` connections (the other masters'): the new master's."""
    connections = candidate.status.connections if candidate.status is not None else ()
    theirs = {d for c in connections if c.name in kept for d in position(c.received_position).domains()}
    return sorted(set(replaced) - theirs)


def replaced_domains(old_master: ServerView | None, candidate: ServerView) -> set[int]:
    """The domains the replaced master wrote: its binlog's and its default domain when it is read, else (a lost
    master) those of its last observed binlog; when neither is known, every domain of the candidate's binlog
    (`new_master_domains` takes out those its kept connections bring)."""
    if old_master is not None and old_master.status is not None:
        return {*old_master.binlog.domains(), old_master.status.default_domain}
    if old_master is not None and old_master.info.last_binlog_pos:
        return set(position(old_master.info.last_binlog_pos).domains())
    return set(candidate.binlog.domains()) if candidate.status is not None else set()


def recorded_words(domains: list[int]) -> str:
    """What an operation's step says of the domains it recorded (nothing when none)."""
    return f" (writable domains recorded: {', '.join(map(str, domains))})" if domains else ""


async def record_writable(ctx: MoveContext, server_id: int, domains: list[int]) -> None:
    """Records `domains` as `server_id`'s writable domains, set by this operation (nothing when there are none)."""
    if not domains:
        return
    async with session_scope(ctx.sessionmaker) as session:
        await WritableDomainsService(session).set(ctx.cluster_id, server_id, domains, by=_set_by(ctx))


async def record_completed(ctx: MoveContext, server: ServerView, domains: list[int]) -> tuple[list[str], list[str]]:
    """`record_writable` for a move's completion, which goes on whatever happens here: what it did and what it could
    not (a database away), each naming the server."""
    if not domains:
        return [], []
    words = ", ".join(map(str, domains))
    try:
        await record_writable(ctx, server.info.id, domains)
    except Exception as e:  # noqa: BLE001  (the servers' part is done: said, not raised)
        return [], [
            f"{server.info.label}: its writable domains ({words}) could not be recorded ({type(e).__name__}: {e}): "
            "the replica guard will make it read-only while it replicates — record them (PUT "
            "…/writable-domains) or take it out of the guard's hands (maintenance)"
        ]
    return [f"{server.info.label}: writable domains recorded: {words}"], []


async def withdraw_writable(ctx: MoveContext, server_id: int) -> list[int]:
    """Takes back the writable domains an operation recorded for `server_id`; returns them (empty: none, or an
    admin's, which stay)."""
    async with session_scope(ctx.sessionmaker) as session:
        service = WritableDomainsService(session)
        current = await service.get(ctx.cluster_id, server_id)
        if not current.writable_domains or not (current.set_by or "").startswith(_SET_BY):
            return []
        await service.set(ctx.cluster_id, server_id, [], by=_set_by(ctx))
        return current.writable_domains


def _set_by(ctx: MoveContext) -> str:
    return f"{_SET_BY}{ctx.operation_id}"
