"""Drill shapes: schedules (cron in a time zone, with their next run times) and runs with their figures."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ferry_control.schemas.cluster import WebhookUrl
from ferry_control.schemas.common import ID_MAX

Strategy = Literal["fixed", "rotation"]


class DrillPlan(BaseModel):
    """What a drill switches to, and whether it switches back."""

    model_config = ConfigDict(extra="forbid")

    candidate_strategy: Strategy = Field(
        "rotation", description="`fixed`: always `candidate_server_id`; `rotation`: the next eligible replica in turn."
    )
    candidate_server_id: int | None = Field(
        None, ge=1, le=ID_MAX, description="The candidate for the `fixed` strategy."
    )
    switch_back: bool = Field(False, description="Switch back to the original master after verifying.")
    webhook_url: WebhookUrl | None = Field(None, description="POSTed when a run fails (besides the settings' URLs).")

    @model_validator(mode="after")
    def _fixed_needs_candidate(self) -> DrillPlan:
        if self.candidate_strategy == "fixed" and self.candidate_server_id is None:
            raise ValueError("candidate_strategy 'fixed' needs candidate_server_id")
        return self


class DrillScheduleCreate(DrillPlan):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"name": "nightly", "cron": "30 2 * * 1-5", "timezone": "Europe/Berlin", "switch_back": True}]
        },
    )

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    cron: str = Field(min_length=9, max_length=100, description="Five-field cron expression.", examples=["0 3 * * *"])
    timezone: str = Field("UTC", min_length=1, max_length=64, description="IANA zone the cron runs in.")
    enabled: bool = True


class DrillScheduleUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"enabled": False}]})

    cron: str | None = Field(None, min_length=9, max_length=100)
    timezone: str | None = Field(None, min_length=1, max_length=64)
    enabled: bool | None = None
    candidate_strategy: Strategy | None = None
    candidate_server_id: int | None = Field(None, ge=1, le=ID_MAX)
    switch_back: bool | None = None
    webhook_url: WebhookUrl | None = None


class DrillScheduleRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 1, "cluster_id": 1, "name": "nightly", "cron": "30 2 * * 1-5", "timezone": "Europe/Berlin",
                    "enabled": True, "candidate_strategy": "rotation", "candidate_server_id": None,
                    "switch_back": True, "webhook_url": None, "next_run_at": "2026-11-23T01:30:00Z",
                    "next_runs": ["2026-11-23T01:30:00Z", "2026-11-24T01:30:00Z"], "last_run_at": None,
                    "created_at": "2026-11-21T13:00:00Z",
                }
            ]
        },
    )  # fmt: skip

    id: int
    cluster_id: int
    name: str
    cron: str
    timezone: str
    enabled: bool
    candidate_strategy: Strategy
    candidate_server_id: int | None
    switch_back: bool
    webhook_url: str | None
    next_run_at: datetime | None = Field(description="When the scheduler runs it next (UTC); None when disabled.")
    next_runs: list[datetime] = Field(default_factory=list, description="The next few run times (UTC).")
    last_run_at: datetime | None
    created_at: datetime


class DrillRunCreate(DrillPlan):
    """Run now: with a schedule's plan (`schedule_id`), or with the plan given here."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"candidate_strategy": "rotation", "switch_back": True}]}
    )

    schedule_id: int | None = Field(
        None, ge=1, le=ID_MAX, description="Use this schedule's plan (the other fields are ignored)."
    )


class DrillRunRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 4, "cluster_id": 1, "schedule_id": 1, "operation_id": 12, "state": "passed", "passed": True,
                    "requester": "scheduler", "reasons": [], "rto_s": 0.21, "catch_up_s": 0.004,
                    "details": {"candidate_server_id": 2, "canaries": {"1": "1-1-77"}},
                    "started_at": "2026-11-23T01:30:00Z", "finished_at": "2026-11-23T01:30:02Z",
                }
            ]
        },
    )  # fmt: skip

    id: int
    cluster_id: int
    schedule_id: int | None
    operation_id: int | None
    state: Literal["pending", "running", "passed", "failed", "interrupted"] = Field(
        description="interrupted: the API instance running it died; reconciled afterwards (see `reasons`)."
    )
    passed: bool | None
    requester: str
    reasons: list[str]
    rto_s: float | None = Field(
        description="Write unavailability of the switchover (old master read-only → new writable)."
    )
    catch_up_s: float | None = Field(description="How long the candidate took to reach the old master's position.")
    details: dict[str, Any]
    started_at: datetime
    finished_at: datetime | None
