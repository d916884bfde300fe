"""A replication link's health by meaning, from what the collector stored of it (pure functions): whether its SQL
side is stalled — in some domain, transactions waiting (received, not applied) and the applied position unmoved for
longer than the connection's configured delay plus a margin (a parallel applier stalls one domain while the others go
on) — with the reason the server gives; and when the applied position last moved in each domain."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ferry_control.core.gtid import seq_by_domain
from ferry_control.models import ReplicationLink
from ferry_control.schemas.topology import LinkSettingsRead, LinkStall

#: How long the applied position may stay unmoved in a domain while transactions wait there before the link is
#: stalled, on top of the connection's configured delay (several collector cycles at the default poll interval).
STALLED_AFTER_S = 5.0

#: SQL states in which no progress is expected: stopped (shown as such), failed (its error is shown), at its UNTIL.
_NOT_APPLYING = {"stopped", "error", "until_reached"}


def applied_moved_at(link: ReplicationLink, applied: str, at: datetime) -> dict[str, str]:
    """`link.applied_moved_at` once `applied` is the link's new applied position, polled at `at`: a domain whose
    position moved (or that is new) moved at `at`, the others keep their time."""
    before, after = seq_by_domain(link.applied_position), seq_by_domain(applied)
    known = link.applied_moved_at or {}
    return {
        str(domain): known[str(domain)] if before.get(domain) == seq and str(domain) in known else at.isoformat()
        for domain, seq in after.items()
    } | ({"": known.get("", at.isoformat())} if not after else {})


def link_settings(link: ReplicationLink) -> LinkSettingsRead | None:
    return LinkSettingsRead.model_validate(link.settings) if link.settings is not None else None


def configured_delay_s(settings: dict[str, Any] | None) -> int:
    return int((settings or {}).get("delay_s") or 0)


def stall(link: ReplicationLink, now: datetime) -> LinkStall | None:
    """The link's stall, if its SQL side makes no progress in some domain while work waits there; None otherwise."""
    if link.sql_state is None or link.sql_state in _NOT_APPLYING or link.applied_moved_at is None:
        return None
    applied = seq_by_domain(link.applied_position)
    moved = link.applied_moved_at
    after_s = configured_delay_s(link.settings) + STALLED_AFTER_S
    waiting: dict[int, int] = {}
    still_s = 0.0
    for domain, seq in seq_by_domain(link.received_position).items():
        since = moved.get(str(domain), moved.get(""))
        behind = seq - applied.get(domain, 0)
        if since is None or behind <= 0:
            continue
        quiet_s = (now - datetime.fromisoformat(since)).total_seconds()
        if quiet_s >= after_s:
            waiting[domain] = behind
            still_s = max(still_s, quiet_s)
    if not waiting:
        return None
    reason = link.sql_state_detail or ("SQL side paused by the operator" if link.sql_state == "paused" else None)
    return LinkStall(
        transactions_waiting=sum(waiting.values()), domains=sorted(waiting), no_progress_s=round(still_s, 1),
        reason=reason,
    )  # fmt: skip
