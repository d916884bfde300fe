"""The service's own health, and its collector's recent cycles and failed polls."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CollectorHealth(BaseModel):
    enabled: bool
    running: bool = Field(
        description="Whether a collector runs: this instance's, or — in a web process, whose collector runs in a "
        "worker — the one holding the collector's lease."
    )
    last_cycle_at: datetime | None
    last_cycle_s: float | None
    role: Literal["leader", "standby"] | None = Field(
        description="With several API instances: the `leader` holds the collector's lease (it polls every cluster, "
        "or with shared collection runs the retention job), a `standby` takes over when that lease lapses; null "
        "when the collector does not run here."
    )
    clusters_collected: int | None = Field(
        None,
        description="Shared collection (PostgreSQL): how many clusters this instance polls and watches now, its "
        "share of them; null otherwise.",
    )
    instance_id: str = Field(description="This API instance's identity (host-pid-random), the holder of its leases.")
    leader_instance_id: str | None = Field(
        description="The instance holding the collector's lease, as this one saw at its last attempt (null: free "
        "or not known)."
    )


class ServiceHealth(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"status": "ok", "database": "ok",
                 "collector": {"enabled": True, "running": True, "last_cycle_at": "2026-11-21T13:00:01Z",
                               "last_cycle_s": 0.012, "role": "leader", "instance_id": "api-1-4242-9f3c01ab",
                               "leader_instance_id": "api-1-4242-9f3c01ab"}}
            ]
        }
    )  # fmt: skip

    status: str
    database: str
    collector: CollectorHealth


class CollectorCycle(BaseModel):
    finished_at: datetime
    duration_s: float = Field(description="How long the cycle took: every server polled and the results recorded.")
    polled: int = Field(description="Servers polled in the cycle.")
    failed: int = Field(description="Polls that got no answer or a bad one (recorded as that server's error).")


class FailedPollServer(BaseModel):
    """A server the collector could not read in some of the cycles shown, and the last reason."""

    cluster_id: int
    cluster: str | None = Field(description="The cluster's name (null: removed since).")
    registered_server_id: int = Field(description="The control plane's id of the registered server.")
    server_id: int | None = Field(description="The server_id the server reports (MariaDB's); null until read.")
    server: str = Field(description="The server's label (`db-3 (server_id 3)`), or says it was removed since.")
    failed: int = Field(description="Its failed polls among the cycles read.")
    first_failed_at: datetime
    last_failed_at: datetime
    last_error: str = Field(description="Why its newest failed poll failed, as the collector recorded it.")


class CollectorFailedPolls(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"cycles": 900, "since": "2026-11-21T12:45:01Z", "failed": 3,
                 "servers": [{"cluster_id": 2, "cluster": "seed000", "registered_server_id": 7, "server_id": 3,
                              "server": "db-3 (server_id 3)", "failed": 3, "first_failed_at": "2026-11-21T12:58:01Z",
                              "last_failed_at": "2026-11-21T12:58:03Z",
                              "last_error": "cannot connect to 10.0.0.3:3306: Connection refused"}]}
            ]
        }
    )  # fmt: skip

    cycles: int = Field(description="The cycles read: the same newest ones GET /collector/cycles shows.")
    since: datetime | None = Field(description="When the oldest of them finished (null: none).")
    failed: int = Field(description="Failed polls in those cycles, the sum of the cycles' `failed`.")
    unnamed: int = Field(
        description="Failed polls no server is named for (cycles stored before servers were kept, or past the "
        "first 100 of a cycle)."
    )
    servers: list[FailedPollServer] = Field(description="Each server with failed polls, the most failures first.")


class CollectorCycles(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"instance_id": "api-1-4242-9f3c01ab", "role": "leader", "poll_interval_s": 1.0,
                 "cycles": [{"finished_at": "2026-11-21T13:00:01Z", "duration_s": 0.012, "polled": 3, "failed": 0}]}
            ]
        }
    )  # fmt: skip

    instance_id: str = Field(
        description="The instance that ran these cycles: this one, or (a web process) the worker that stored them."
    )
    role: Literal["leader", "standby"] | None
    poll_interval_s: float
    cycles: list[CollectorCycle] = Field(
        description="The newest cycles, oldest first (the last 900): this instance's own when it runs a collector "
        "(empty on a standby or after a restart), else those the collectors stored."
    )
