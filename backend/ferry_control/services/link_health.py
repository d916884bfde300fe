"""A replication link's health by meaning, from what the collector stored of it (pure functions): whether its SQL
side is stalled — work waiting (received but not applied) and the applied position unmoved for longer than the
connection's configured delay plus a margin — with the reason the server gives, and its lag beyond that delay."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ferry_control.core.gtid import seq_by_domain
from ferry_control.models import ReplicationLink
from ferry_control.schemas.topology import LinkSettingsRead, LinkStall

#: How long the applied position may stay unmoved while transactions wait before the link is stalled, on top of the
#: connection's configured delay (several collector cycles at the default poll interval).
STALLED_AFTER_S = 5.0

#: SQL states in which no progress is expected: stopped (shown as such), failed (its error is shown), at its UNTIL.
_NOT_APPLYING = {"stopped", "error", "until_reached"}


def waiting_transactions(received: str | None, applied: str | None) -> int:
    """Transactions received (relay log / read-ahead) and not yet applied, summed over domains."""
    done = seq_by_domain(applied)
    return sum(max(0, seq - done.get(domain, 0)) for domain, seq in seq_by_domain(received).items())


def link_settings(link: ReplicationLink) -> LinkSettingsRead | None:
    return LinkSettingsRead.model_validate(link.settings) if link.settings is not None else None


def configured_delay_s(settings: dict[str, Any] | None) -> int:
    return int((settings or {}).get("delay_s") or 0)


def stall(link: ReplicationLink, now: datetime) -> LinkStall | None:
    """The link's stall, if its SQL side makes no progress while work waits; None otherwise."""
    if link.sql_state is None or link.sql_state in _NOT_APPLYING or link.applied_changed_at is None:
        return None
    waiting = waiting_transactions(link.received_position, link.applied_position)
    still_s = (now - link.applied_changed_at).total_seconds()
    if waiting == 0 or still_s < configured_delay_s(link.settings) + STALLED_AFTER_S:
        return None
    reason = link.sql_state_detail or ("SQL side paused by the operator" if link.sql_state == "paused" else None)
    return LinkStall(transactions_waiting=waiting, no_progress_s=round(still_s, 1), reason=reason)
