"""Operation shapes: the operation resource with its live steps, and one request body per operation type."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ferry_control.models import OperationState
from ferry_control.schemas.common import ID_MAX, GtidPositionText

ConnectionName = Field(
    None,
    pattern=r"^[A-Za-z0-9_]{1,64}$",
    description="The replica's connection name; default: its only connection, else the configured default name.",
    examples=["main"],
)
DryRun = Field(False, description="Run the preflight only: nothing is changed; the checks are in the result.")
ServerRef = Field(ge=1, le=ID_MAX, description="A registered server's id in this cluster.", examples=[2])


class OperationStep(BaseModel):
    """One step of an operation, updated live as it runs."""

    name: str = Field(examples=["candidate_catch_up"])
    state: Literal["running", "passed", "failed", "skipped"] = Field(examples=["passed"])
    started_at: datetime
    finished_at: datetime | None = None
    duration_s: float | None = Field(None, examples=[0.084])
    detail: Any = Field(None, description="What the step found or did (text, or an object for checks and lists).")


class OperationRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 7, "cluster_id": 1, "type": "switchover", "state": "succeeded", "dry_run": False,
                    "params": {"candidate_server_id": 2}, "requester": "alice",
                    "steps": [{"name": "preflight", "state": "passed", "started_at": "2026-11-21T13:00:00Z",
                               "finished_at": "2026-11-21T13:00:00.2Z", "duration_s": 0.2, "detail": None}],
                    "idempotency_key": "b0c7…", "error": None,
                    "result": {"unavailable_s": 0.41, "old_master_server_id": 1, "new_master_server_id": 2},
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
    steps: list[OperationStep]
    requester: str
    idempotency_key: str | None
    result: dict[str, Any] | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class OperationRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dry_run: bool = DryRun


class SwitchoverRequest(OperationRequest):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"candidate_server_id": 2, "expected_master_server_id": 1, "dry_run": False}]},
    )

    candidate_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The new master; unset: the replica ahead of all others (or made so by catching up).",
    )
    expected_master_server_id: int | None = Field(
        None, ge=1, le=ID_MAX, description="Refuse (check `expected_master`) unless this server is the master now."
    )
    source_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The source whose role moves: a master of several, or an intermediate master (one with "
        "incoming connections: its candidate takes them over under the same names). Unset: the candidate's only "
        "master, else the cluster's only master.",
    )


class FailoverRequest(OperationRequest):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"candidate_server_id": None}]})

    candidate_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The new master; unset: the most advanced replica (leveled from its peers first).",
    )
    source_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The master to replace, in a cluster of several (the two-master shape has two); unset: the only "
        "master, or of several the only one lost. The candidate is one of its direct replicas; a multi-source "
        "candidate keeps its connections to the other masters.",
    )


class RepointRequest(OperationRequest):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"server_id": 3, "master_server_id": 2, "use_gtid": "slave_pos"}]},
    )

    server_id: int = ServerRef
    master_server_id: int = Field(ge=1, le=ID_MAX, description="The server it should replicate from.", examples=[2])
    use_gtid: Literal["slave_pos", "current_pos"] = Field(
        "slave_pos", description="`current_pos` for a former master whose own transactions are in its binlog."
    )
    connection: str | None = ConnectionName

    @model_validator(mode="after")
    def _not_itself(self) -> RepointRequest:
        if self.server_id == self.master_server_id:
            raise ValueError(f"server {self.server_id} cannot replicate from itself")
        return self


class ReadOnlyRequest(OperationRequest):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"server_id": 1, "read_only": True}]})

    server_id: int = ServerRef
    read_only: bool


class StartReplicationRequest(OperationRequest):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"server_id": 3, "until": "1-1-40,2-2-17"}]}
    )

    server_id: int = ServerRef
    connection: str | None = ConnectionName
    until: GtidPositionText | None = Field(
        None, description="START … UNTIL: each listed domain up to its GTID, then the connection stops."
    )


class StopReplicationRequest(OperationRequest):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"server_id": 3}]})

    server_id: int = ServerRef
    connection: str | None = ConnectionName


class BringLevelRequest(OperationRequest):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"server_id": 3, "source_server_id": 2, "timeout_s": 30}]}
    )

    server_id: int = ServerRef
    source_server_id: int = Field(ge=1, le=ID_MAX, description="The server to get level with.", examples=[2])
    timeout_s: float | None = Field(None, gt=0, le=300, description="Bound on the wait; default: the catch-up timeout.")

    @model_validator(mode="after")
    def _not_itself(self) -> BringLevelRequest:
        if self.server_id == self.source_server_id:
            raise ValueError(f"server {self.server_id} is always level with itself")
        return self


class SkipTransactionsRequest(OperationRequest):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"server_id": 3, "connection": "main", "count": 1}]}
    )

    server_id: int = ServerRef
    connection: str | None = ConnectionName
    count: int = Field(
        1,
        ge=1,
        le=100,
        description="How many transactions to skip, from the one that stopped the connection (sql_slave_skip_counter). "
        "They are lost on that replica.",
        examples=[1],
    )
