"""What the processes of one deployment share through the database besides leases: the collector's recent cycles
(read by every web process for the collector health plot) and, on SQLite, the events relayed between the web and
worker processes (PostgreSQL relays them with LISTEN/NOTIFY instead)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base, BigId, utcnow


class CollectorCycleRow(Base):
    """One finished collector cycle (kept: the newest RECENT_CYCLES_MAX)."""

    __tablename__ = "collector_cycles"
    __table_args__ = (Index(None, "finished_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    instance_id: Mapped[str] = mapped_column(String(200))
    finished_at: Mapped[datetime] = mapped_column(default=utcnow)
    duration_s: Mapped[float]
    polled: Mapped[int]
    failed: Mapped[int]
    #: The servers it could not read and why: {cluster_id, registered_server_id, error} each (at most
    #: services/collector.py's FAILURES_KEPT_MAX; None for cycles stored before they were kept).
    failures: Mapped[list[Any] | None] = mapped_column(default=None)


class RelayedEvent(Base):
    """A batch of cluster events one process published, for the others to read (SQLite's relay; kept minutes)."""

    __tablename__ = "relayed_events"
    __table_args__ = (Index(None, "created_at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    origin: Mapped[str] = mapped_column(String(200))
    #: The batch as the PostgreSQL relay's notification payload (services/event_relay.py `pack`).
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
