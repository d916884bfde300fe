"""Drill schedules (cron with a time zone, the kind of drill: switchover or failover) and drill runs with their
figures (RTO, a failover drill's RPO, catch-up time, pass/fail with reasons). A run is carried out as an operation
of type `drill` (its steps are the operation's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base, utcnow


class DrillSchedule(Base):
    __tablename__ = "drill_schedules"
    __table_args__ = (UniqueConstraint("cluster_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    cron: Mapped[str] = mapped_column(String(100))
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    enabled: Mapped[bool] = mapped_column(default=True)
    #: What the drill rehearses: `switchover` or `failover`.
    kind: Mapped[str] = mapped_column(String(16), default="switchover", server_default="switchover")
    #: `fixed` (candidate_server_id) or `rotation`.
    candidate_strategy: Mapped[str] = mapped_column(String(16), default="rotation")
    candidate_server_id: Mapped[int | None] = mapped_column(ForeignKey("servers.id", ondelete="SET NULL"), default=None)
    switch_back: Mapped[bool] = mapped_column(default=False)
    #: The source the drill moves (None: the cluster's only master).
    source_server_id: Mapped[int | None] = mapped_column(ForeignKey("servers.id", ondelete="SET NULL"), default=None)
    webhook_url: Mapped[str | None] = mapped_column(String(1000), default=None)
    next_run_at: Mapped[datetime | None] = mapped_column(default=None)
    last_run_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class DrillRun(Base):
    __tablename__ = "drill_runs"
    __table_args__ = (Index(None, "cluster_id", "started_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"))
    schedule_id: Mapped[int | None] = mapped_column(ForeignKey("drill_schedules.id", ondelete="SET NULL"), default=None)
    operation_id: Mapped[int | None] = mapped_column(ForeignKey("operations.id", ondelete="SET NULL"), default=None)
    #: `pending`, `running`, `passed`, `failed`, `interrupted` (its API instance died; reconciled afterwards).
    state: Mapped[str] = mapped_column(String(16), default="pending")
    #: The API token's name, or `scheduler`.
    requester: Mapped[str] = mapped_column(String(100), default="scheduler")
    #: What it rehearsed: `switchover` or `failover`.
    kind: Mapped[str] = mapped_column(String(16), default="switchover", server_default="switchover")
    passed: Mapped[bool | None] = mapped_column(default=None)
    reasons: Mapped[list[Any]] = mapped_column(JSON, default=list)
    #: Write unavailability: the switchover's window, or a failover drill's fence → new master writable.
    rto_s: Mapped[float | None] = mapped_column(default=None)
    #: A failover drill's RPO: acknowledged canary writes the new master lacked once writable.
    rpo_lost: Mapped[int | None] = mapped_column(default=None)
    catch_up_s: Mapped[float | None] = mapped_column(default=None)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)

    @property
    def failover(self) -> dict[str, Any] | None:
        """A failover drill's figures (kept in `details`), shown on their own in the API."""
        figures = (self.details or {}).get("failover")
        return figures if isinstance(figures, dict) else None

    @property
    def canary_writer(self) -> dict[str, Any] | None:
        """The live canary writer's report (kept in `details`), shown on its own in the API."""
        report = (self.details or {}).get("canary_writer")
        return report if isinstance(report, dict) else None
