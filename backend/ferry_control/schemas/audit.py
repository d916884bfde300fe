"""Audit log shapes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

AuditKind = Literal["run", "dry_run", "change", "refused"]


class AuditOperationRead(BaseModel):
    """The operation an audited call started, as it stands now."""

    id: int
    type: str
    dry_run: bool
    state: str
    old_master: str | None = Field(
        description="The master the operation moves the role from (its result's, else the one it expected), by label."
    )
    new_master: str | None = Field(
        description="The server it moves the role to (its result's, else the candidate asked for), by label."
    )


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
    registered_server_id: int | None = Field(
        None,
        description="The registered server the call concerned: its path's, or the one it registered.",
        # Read from the row, whose column keeps the older name.
        validation_alias=AliasChoices("registered_server_id", "server_id"),
    )
    operation_id: int | None = Field(None, description="The operation the call started (a dry run or a run).")
    kind: AuditKind = Field(
        "change",
        description="run: it started an operation that changes servers; dry_run: it started a dry run (checks and a "
        "plan, nothing changed); change: any other accepted change (a token, a cluster, a server, settings); refused: "
        "it was refused or failed (see outcome and status_code).",
    )
    operation: AuditOperationRead | None = Field(
        None, description="The operation it started, with its old → new master where it moves one."
    )
