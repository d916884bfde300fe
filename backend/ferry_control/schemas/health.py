"""The service's own health."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CollectorHealth(BaseModel):
    enabled: bool
    running: bool
    last_cycle_at: datetime | None
    last_cycle_s: float | None
    role: Literal["leader", "standby"] | None = Field(
        description="With several API instances one collects at a time: `leader` polls, a `standby` takes over "
        "when the leader's lease lapses; null when the collector does not run here."
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
