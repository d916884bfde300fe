"""The service's own health."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class CollectorHealth(BaseModel):
    enabled: bool
    running: bool
    last_cycle_at: datetime | None
    last_cycle_s: float | None


class ServiceHealth(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"status": "ok", "database": "ok",
                 "collector": {"enabled": True, "running": True, "last_cycle_at": "2026-11-21T13:00:01Z",
                               "last_cycle_s": 0.012}}
            ]
        }
    )  # fmt: skip

    status: str
    database: str
    collector: CollectorHealth
