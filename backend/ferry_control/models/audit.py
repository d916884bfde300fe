"""The audit log: one row per state-changing API call — who, what, when, and how it ended."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base, BigId, utcnow


class AuditEntry(Base):
    __tablename__ = "audit_log"
    __table_args__ = (Index(None, "at"), Index(None, "cluster_id", "at"), Index(None, "server_id", "at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    at: Mapped[datetime] = mapped_column(default=utcnow)
    #: The token's name, or None when no valid token was offered.
    actor: Mapped[str | None] = mapped_column(String(100), default=None)
    #: Not a foreign key: the row outlives a deleted token.
    token_id: Mapped[int | None] = mapped_column(default=None)
    #: The route's operation name, e.g. `create_server`.
    action: Mapped[str] = mapped_column(String(100))
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(String(500))
    cluster_id: Mapped[int | None] = mapped_column(default=None)
    #: The server the call concerned: its path's, or the one it registered. Not a foreign key (outlives the server).
    server_id: Mapped[int | None] = mapped_column(default=None)
    #: The operation the call started (a dry run or a run). Not a foreign key.
    operation_id: Mapped[int | None] = mapped_column(default=None)
    #: `succeeded`, `failed` (the request was refused or went wrong) or `denied` (authentication or role).
    outcome: Mapped[str] = mapped_column(String(16))
    status_code: Mapped[int]
    #: Path parameters, the error code if any, the idempotency key if any.
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
