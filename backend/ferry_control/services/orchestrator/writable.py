"""The domains a multi-source server writes once an operation made it the master of some domains while it keeps
replicating the others (one master of the two-master shape replaced by its multi-source replica): recorded as the
server's writable domains (`replica_guard.writable_domains`, `set_by` "operation N") once it is promoted, while the
operation still holds the cluster (the guard acts on none of its servers then), so that the replica guard does not
make the new master read-only for replicating, its writes in those domains are not errant, and the topology raises no
writable-replica alert about it. An operation that stops between the promotion and the record (a crash) leaves it
unrecorded: the guard then makes the new master read-only, with its audit row, event and webhooks. A rejoin, which
makes a server a plain replica again, takes back what an operation recorded (an admin's setting stays)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ServerView
from ferry_control.services.writable_domains import WritableDomainsService

_SET_BY = "operation "


def new_master_domains(replaced: Iterable[int], candidate: ServerView, kept: Collection[str]) -> list[int]:
    """The domains the replaced master wrote (`replaced`: its binlog's, or what was heard of it) less those the
    candidate receives over its `kept` connections (the other masters'): the new master's."""
    connections = candidate.status.connections if candidate.status is not None else ()
    theirs = {d for c in connections if c.name in kept for d in position(c.received_position).domains()}
    return sorted(set(replaced) - theirs)


def recorded_words(domains: list[int]) -> str:
    """What an operation's step says of the domains it recorded (nothing when none)."""
    return f" (writable domains recorded: {', '.join(map(str, domains))})" if domains else ""


async def record_writable(ctx: OperationContext[Any, Any], server_id: int, domains: list[int]) -> None:
    """Records `domains` as `server_id`'s writable domains, set by this operation (nothing when there are none)."""
    if not domains:
        return
    async with session_scope(ctx.sessionmaker) as session:
        await WritableDomainsService(session).set(ctx.cluster_id, server_id, domains, by=_set_by(ctx))


async def withdraw_writable(ctx: OperationContext[Any, Any], server_id: int) -> list[int]:
    """Takes back the writable domains an operation recorded for `server_id`; returns them (empty: none, or an
    admin's, which stay)."""
    async with session_scope(ctx.sessionmaker) as session:
        service = WritableDomainsService(session)
        current = await service.get(ctx.cluster_id, server_id)
        if not current.writable_domains or not (current.set_by or "").startswith(_SET_BY):
            return []
        await service.set(ctx.cluster_id, server_id, [], by=_set_by(ctx))
        return current.writable_domains


def _set_by(ctx: OperationContext[Any, Any]) -> str:
    return f"{_SET_BY}{ctx.operation_id}"
