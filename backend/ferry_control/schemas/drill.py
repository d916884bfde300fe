"""Drill shapes: schedules (cron in a time zone, with their next run times) and runs with their figures."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ferry_control.schemas.cluster import WebhookUrl
from ferry_control.schemas.common import ID_MAX
from ferry_control.schemas.operation_results import FailoverDrillFigures

Strategy = Literal["fixed", "rotation"]
#: What a drill rehearses.
Kind = Literal["switchover", "failover"]
KIND = (
    "`switchover`: a planned switchover to the candidate. `failover`: the master failed over as if it were lost — "
    "fenced alive (drained on the proxies, read-only, sessions that bypass read-only ended), never killed — the "
    "candidate promoted by the failover's moves, RTO and RPO measured, then the old master rejoined as a replica of "
    "the new one; refused when no replica can take over keeping every domain."
)
#: The meaning of a drill's `source_registered_server_id`.
SOURCE = (
    "The source whose role the drill moves: unset, the cluster's only master (or the fixed candidate's only master); "
    "an intermediate master (the two-master shape's hub) is drilled with canaries written on each of its masters in "
    "their domains, its role moved to a replica (and back), the masters never stopping."
)


class DrillPlan(BaseModel):
    """What a drill rehearses, what it moves the role to, and whether it moves it back."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind = Field("switchover", description=KIND)
    candidate_strategy: Strategy = Field(
        "rotation",
        description="`fixed`: always `candidate_registered_server_id`; `rotation`: the next eligible replica in turn.",
    )
    candidate_registered_server_id: int | None = Field(
        None, ge=1, le=ID_MAX, description="The candidate for the `fixed` strategy."
    )
    switch_back: bool = Field(
        False, description="Switch back to the original master after verifying (a failover drill: once it rejoined)."
    )
    source_registered_server_id: int | None = Field(
        None, ge=1, le=ID_MAX, description=SOURCE,
    )  # fmt: skip
    webhook_url: WebhookUrl | None = Field(None, description="POSTed when a run fails (besides the settings' URLs).")

    @model_validator(mode="after")
    def _fixed_needs_candidate(self) -> DrillPlan:
        if self.candidate_strategy == "fixed" and self.candidate_registered_server_id is None:
            raise ValueError("candidate_strategy 'fixed' needs candidate_registered_server_id")
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
    kind: Kind | None = Field(None, description=KIND)
    candidate_strategy: Strategy | None = None
    candidate_registered_server_id: int | None = Field(None, ge=1, le=ID_MAX)
    switch_back: bool | None = None
    source_registered_server_id: int | None = Field(None, ge=1, le=ID_MAX, description=SOURCE)
    webhook_url: WebhookUrl | None = None


class DrillScheduleRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 1, "cluster_id": 1, "name": "nightly", "cron": "30 2 * * 1-5", "timezone": "Europe/Berlin",
                    "enabled": True, "kind": "switchover", "candidate_strategy": "rotation",
                    "candidate_registered_server_id": None, "switch_back": True, "webhook_url": None,
                    "next_run_at": "2026-11-23T01:30:00Z",
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
    kind: Kind = Field(description=KIND)
    candidate_strategy: Strategy
    # Read from the schedule's row, whose columns keep the older names.
    candidate_registered_server_id: int | None = Field(
        validation_alias=AliasChoices("candidate_registered_server_id", "candidate_server_id")
    )
    switch_back: bool
    source_registered_server_id: int | None = Field(
        None,
        description=SOURCE,
        validation_alias=AliasChoices("source_registered_server_id", "source_server_id"),
    )
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


class CanaryCounts(BaseModel):
    """The live canary writer's attempts in one phase, by how they ended."""

    acknowledged: int = Field(description="The server answered with the canary's GTID: it must be on every server.")
    refused: int = Field(description="The server said no (read-only, in the switch) or was not reached: not written.")
    unknown: int = Field(description="Sent, and the answer lost: it may have committed or not (never counted lost).")


class CanaryPhases(BaseModel):
    before: CanaryCounts = Field(description="Before the switch began.")
    during: CanaryCounts = Field(description="While a switch (or the switch back) ran.")
    after: CanaryCounts = Field(description="After it, until the writer stopped.")


class WriterWindow(BaseModel):
    switch: Literal["switch", "switch_back", "failover"]
    old_master_registered_server_id: int
    new_master_registered_server_id: int
    window_s: float | None = Field(
        description="The writer's last acknowledged write on the old master → its first on the new one (None: the "
        "switch did not complete, or no write got through)."
    )


class CanaryWriterReport(BaseModel):
    """What the drill's live canary writer saw: a write per domain every `interval_ms` to whichever server was the
    writable master, before, during and after the switch; then every acknowledged canary read back on every
    server."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "interval_ms": 40, "domains": [0, 1, 2], "per_domain_max": 2000, "capped": False,
                    "phases": {"before": {"acknowledged": 36, "refused": 0, "unknown": 0},
                               "during": {"acknowledged": 4, "refused": 3, "unknown": 0},
                               "after": {"acknowledged": 40, "refused": 0, "unknown": 0}},
                    "window_s": 0.061, "acknowledged": 80, "verified": True, "lost": 0, "duplicated": 0,
                    "windows": [{"switch": "switch", "old_master_registered_server_id": 1,
                                 "new_master_registered_server_id": 2, "window_s": 0.061}],
                    "lost_canaries": [], "duplicated_gtids": [], "behind": [],
                }
            ]
        }
    )  # fmt: skip

    interval_ms: int
    domains: list[int]
    per_domain_max: int = Field(description="Bound on the writes per domain.")
    capped: bool = Field(description="A domain stopped writing at the bound.")
    phases: CanaryPhases
    window_s: float | None = Field(
        description="The write-unavailability window the writer saw across the switch (or the failover)."
    )
    windows: list[WriterWindow] = Field(description="One per switch (or failover, and switch back).")
    acknowledged: int
    verified: bool = Field(description="Every acknowledged canary was looked for on every server.")
    lost: int = Field(description="Acknowledged canaries missing (or different) on a server: the drill fails.")
    duplicated: int = Field(description="GTIDs acknowledged for more than one canary: the drill fails.")
    lost_canaries: list[str] = Field(description="The first lost ones: `server: key (gtid, phase) is …`.")
    duplicated_gtids: list[str]
    behind: list[str] = Field(description="Servers that did not reach the acknowledged GTIDs in time.")


class DrillRunRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 4, "cluster_id": 1, "schedule_id": 1, "operation_id": 12, "state": "passed", "passed": True,
                    "requester": "scheduler", "kind": "switchover", "reasons": [], "rto_s": 0.21, "catch_up_s": 0.004,
                    "rpo_lost": None,
                    "details": {"candidate_registered_server_id": 2, "canaries": {"1": "1-1-77"}},
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
    kind: Kind = Field(description=KIND)
    reasons: list[str]
    rto_s: float | None = Field(
        description="RTO, the write unavailability: of the switchover (old master read-only → new writable); of a "
        "failover drill's failover (the old master's fence → the new master writable)."
    )
    rpo_lost: int | None = Field(
        None, description="A failover drill's RPO: canary writes the old master acknowledged that the new master "
        "lacked once writable (read back on it right after its promotion; 0 expected). None for a switchover drill."
    )  # fmt: skip
    catch_up_s: float | None = Field(description="How long the candidate took to reach the old master's position.")
    failover: FailoverDrillFigures | None = Field(
        None, description="A failover drill's figures: RTO (the failover's and the writer's), RPO, and the rejoin."
    )
    canary_writer: CanaryWriterReport | None = Field(
        None, description="The live canary writer's counts per phase, its window and what was lost (None: not run)."
    )
    details: dict[str, Any]
    started_at: datetime
    finished_at: datetime | None
