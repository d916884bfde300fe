"""The clusters overview: one line per cluster (its fields, health in words, masters, replicas, worst lag, last
drill), computed on the server so the dashboard asks once for every cluster."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ferry_control.schemas.cluster import ClusterRead
from ferry_control.schemas.lag import LagVerdict
from ferry_control.schemas.topology import ClusterAlert

ClusterHealth = Literal["healthy", "degraded", "down", "empty"]


class WorstLag(LagVerdict):
    """The worst lag over every connection and domain, judged against each connection's configured delay (a replica
    delayed on purpose and at its delay is not behind), with the connection it is on and its figure in the words
    the topology, the positions and ferryctl use for it."""

    replica: str = Field(description="The replica's label.")
    connection: str | None = Field(description="The connection's name on the replica.")
    domain: int


class ClusterSummary(BaseModel):
    """A cluster's summary from its topology graph alone."""

    health: ClusterHealth = Field(
        description="empty: no servers; down: every server unreachable or no master; degraded: any problem."
    )
    problems: list[str] = Field(description="Why it is not healthy, in words.")
    warnings: list[str] = Field(
        default_factory=list,
        description="What to look at that does not make it degraded, in words: a connection whose SQL side applies "
        "nothing while transactions wait (a lock wait, stuck workers), with the reason the server gives.",
    )
    masters: list[str] = Field(description="The masters' names (a lone standalone server counts as the master).")
    replica_count: int = Field(description="Replicas and intermediate masters.")
    server_count: int
    worst_lag: WorstLag | None = Field(description="None when no connection reports lag.")
    alerts: list[ClusterAlert] = Field(
        default_factory=list, description="As the topology has them: a read-only master, an interrupted operation."
    )


class LastDrill(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    state: Literal["pending", "running", "passed", "failed", "interrupted"]
    started_at: datetime
    rto_s: float | None


class ClusterOverview(ClusterSummary, ClusterRead):
    """A cluster as ClusterRead has it, its summary and its last drill."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 1, "name": "orders", "description": "orders service", "admin_port_offset": 100,
                    "node_token_set": True, "db_user_set": False, "db_password_set": False,
                    "replication_user_set": False, "replication_password_set": False, "tls_ca_set": False,
                    "plaintext_transport": False, "auto_failover": True, "failover_suspended_at": None,
                    "last_failover_at": None, "last_failover_operation_id": None, "pre_operation_webhooks": [],
                    "post_operation_webhooks": [], "created_at": "2026-11-21T13:00:00Z",
                    "updated_at": "2026-11-21T13:00:00Z",
                    "health": "degraded", "problems": ["node3 unreachable"], "masters": ["node1"],
                    "replica_count": 2, "server_count": 3, "worst_lag": {"seconds": 0.2, "transactions": 3},
                    "last_drill": {"id": 4, "state": "passed", "started_at": "2026-11-23T01:30:00Z", "rto_s": 0.21},
                }
            ]
        }
    )  # fmt: skip

    last_drill: LastDrill | None = Field(description="The cluster's newest drill run; None if it never had one.")
