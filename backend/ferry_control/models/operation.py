"""Operations on a cluster (switchover, failover, repoint, read-only, …): what was asked, by whom, each step with
its timings, and the result. Written by the orchestrator; read through the API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Enum, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.core.enums import OperationState
from ferry_control.models.base import Base, utcnow


class Operation(Base):
    __tablename__ = "operations"
    __table_args__ = (
        UniqueConstraint("cluster_id", "requester", "idempotency_key"),
        Index(None, "cluster_id", "created_at"),
        Index(None, "state"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"))
    type: Mapped[str] = mapped_column(String(40))
    state: Mapped[OperationState] = mapped_column(
        Enum(OperationState, native_enum=False, create_constraint=True, length=16), default=OperationState.pending
    )
    dry_run: Mapped[bool] = mapped_column(default=False)
    #: The request's parameters as its type's model stores them (schemas/operation.py `PARAMS`).
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: Each step as `OperationStep` stores it (name, state, started_at, finished_at, duration_s, detail), updated as
    #: the operation runs.
    steps: Mapped[list[Any]] = mapped_column(JSON, default=list)
    #: The API token's name that asked for it (or `scheduler` / `collector`).
    requester: Mapped[str] = mapped_column(String(100))
    idempotency_key: Mapped[str | None] = mapped_column(String(200), default=None)
    #: What it found and did, as its type's result model stores it (schemas/operation.py `RESULTS`).
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    #: Who asked to cancel it while it ran (`POST …/cancel`); the process running it stops it.
    cancel_requested_by: Mapped[str | None] = mapped_column(String(100), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)
