"""Audit log shapes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class AuditEntryRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {"id": 12, "at": "2026-11-21T13:00:00Z", "actor": "alice", "token_id": 2, "action": "create_server",
                 "method": "POST", "path": "/api/v1/clusters/1/servers", "cluster_id": 1, "outcome": "succeeded",
                 "status_code": 201, "details": {"path_params": {"cluster_id": "1"}}}
            ]
        },
    )  # fmt: skip

    id: int
    at: datetime
    actor: str | None
    token_id: int | None
    action: str
    method: str
    path: str
    cluster_id: int | None
    outcome: str
    status_code: int
    details: dict[str, Any] = Field(
        description="The path's parameters, the error code and the idempotency key if any, and `server`: the label of "
        "the path's server when the call names one (`db-3 (server_id 3)`)."
    )
