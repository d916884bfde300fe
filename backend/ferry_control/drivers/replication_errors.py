"""What a stopped replication connection's error code means, whatever the server's kind: each kind's codes (ferryd's
names, MariaDB's errnos) mapped to one `ReplicationFailure`, so services can tell it in words and say what to do
without knowing any kind's codes (services/replication_advice.py)."""

from __future__ import annotations

import enum

from ferry_control.models import ServerKind


class ReplicationFailure(enum.StrEnum):
    #: Strict mode refused a GTID that is not above what the replica holds in its domain (the replica wrote
    #: transactions of its own there, or was given them from elsewhere).
    out_of_order = "out_of_order"
    #: Two servers write one domain (the replica's own GTIDs in the domain the master also writes).
    two_masters = "two_masters"
    #: The replica is ahead of the master in a domain, or its history differs from the master's.
    diverged = "diverged"
    #: The master no longer has (purged) or never had the position the replica needs next.
    position_missing = "position_missing"
    #: The master's binlog or the replica's relay log could not be read.
    log_unreadable = "log_unreadable"
    #: The master refused the replica's login or token.
    access_denied = "access_denied"
    #: A replicated transaction failed to apply (a missing row, a duplicate key, …).
    apply_failed = "apply_failed"
    #: The master could not be reached.
    unreachable = "unreachable"


_FERRY = {
    "STRICT_MODE": ReplicationFailure.out_of_order,
    "TWO_MASTERS": ReplicationFailure.two_masters,
    "REPLICA_AHEAD": ReplicationFailure.diverged,
    "DIVERGED": ReplicationFailure.diverged,
    "POSITION_PURGED": ReplicationFailure.position_missing,
    "BINLOG_UNREADABLE": ReplicationFailure.log_unreadable,
    "RELAY_CORRUPT": ReplicationFailure.log_unreadable,
    "PERMISSION_DENIED": ReplicationFailure.access_denied,
    "NO_TOKEN": ReplicationFailure.access_denied,
    "APPLY_FAILED": ReplicationFailure.apply_failed,
}
_MARIADB = {
    "1950": ReplicationFailure.out_of_order,
    "1236": ReplicationFailure.position_missing,
    "1220": ReplicationFailure.log_unreadable,
    "1594": ReplicationFailure.log_unreadable,
    "1045": ReplicationFailure.access_denied,
    "1062": ReplicationFailure.apply_failed,
    "1032": ReplicationFailure.apply_failed,
    "1146": ReplicationFailure.apply_failed,
    "2003": ReplicationFailure.unreachable,
    "2005": ReplicationFailure.unreachable,
    "2013": ReplicationFailure.unreachable,
}


def classify(kind: ServerKind, code: str | None) -> ReplicationFailure | None:
    """None: a code this kind's table does not know (the server's own message is all there is)."""
    if not code:
        return None
    table = _FERRY if kind == ServerKind.ferry else _MARIADB if kind == ServerKind.mariadb else {}
    return table.get(code.strip())
