"""Operation shapes (read side)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from ferry_control.models import OperationState


class OperationRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 7, "cluster_id": 1, "type": "switchover", "state": "succeeded", "dry_run": False,
                    "params": {"candidate_server_id": 2}, "requester": "alice",
                    "steps": [{"name": "preflight", "state": "passed", "started_at": "2026-11-21T13:00:00Z",
                               "finished_at": "2026-11-21T13:00:00.2Z", "detail": None}],
                    "idempotency_key": "b0c7…", "result": {"unavailable_s": 0.41}, "error": None,
                    "created_at": "2026-11-21T13:00:00Z", "started_at": "2026-11-21T13:00:00Z",
                    "finished_at": "2026-11-21T13:00:02Z",
                }
            ]
        },
    )  # fmt: skip

    id: int
    cluster_id: int
    type: str
    state: OperationState
    dry_run: bool
    params: dict[str, Any]
    steps: list[Any]
    requester: str
    idempotency_key: str | None
    result: dict[str, Any] | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
