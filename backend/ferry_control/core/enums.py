"""The named values that stored rows and the API's shapes share: a server's kind, health, promotion rule and origin,
a replication link's source, an operation's state. The models store them and the schemas carry them; they live here,
free of the ORM, so that what reads only the API's shapes (ferryctl) starts without loading SQLAlchemy."""

from __future__ import annotations

import enum


class ServerKind(enum.StrEnum):
    """Which driver speaks to the server."""

    ferry = "ferry"
    mariadb = "mariadb"


class HealthState(enum.StrEnum):
    #: Never polled, or its admin address is not known.
    unknown = "unknown"
    healthy = "healthy"
    #: Answers, but reports a failure (ferryd: a binlog write or fsync failed; it refuses writes).
    failing = "failing"
    #: `unreachable_after_failures` polls in a row failed.
    unreachable = "unreachable"


class PromotionRule(enum.StrEnum):
    """Whether a failover or switchover may make this server a master (orchestrator's promotion rules, Patroni's
    failover_priority): `prefer` first, `neutral`, `prefer_not` only when no better one can (and then the role is
    moved on to a better one in a second step), `must_not` never."""

    prefer = "prefer"
    neutral = "neutral"
    prefer_not = "prefer_not"
    must_not = "must_not"

    @property
    def rank(self) -> int:
        """Lower is better."""
        return list(PromotionRule).index(self)


class ServerOrigin(enum.StrEnum):
    registered = "registered"
    discovered = "discovered"


class OperationState(enum.StrEnum):
    pending = "pending"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    #: Failed, and what it had changed was put back.
    undone = "undone"
    #: Its API instance died while it ran (crash, kill): an instance reconciled it later with the servers (finished
    #: or undone what it had begun; the result's `reconciled` says what was found and done).
    interrupted = "interrupted"


class LinkSource(enum.StrEnum):
    #: From the replica's own connection status (name, states, lag).
    replica = "replica"
    #: From the master's list of connected replicas (no connection name, no states).
    master = "master"
