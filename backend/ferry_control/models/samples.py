"""Time series the collector keeps: per-domain GTID positions and per-link, per-domain lag. Both are change-only
(a row is written when the value changed) and downsampled then deleted by the retention job."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Text
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base, BigId, utcnow


class PositionSample(Base):
    """A server's GTID in one domain (from gtid_current_pos: what the server has, written or replicated)."""

    __tablename__ = "position_samples"
    __table_args__ = (Index(None, "server_id", "domain_id", "sampled_at"), Index(None, "sampled_at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    domain_id: Mapped[int] = mapped_column(BigInteger)
    gtid: Mapped[str] = mapped_column(Text)
    seq_no: Mapped[int] = mapped_column(BigInteger)
    sampled_at: Mapped[datetime] = mapped_column(default=utcnow)


class LagSample(Base):
    """A replication link's lag in one domain."""

    __tablename__ = "lag_samples"
    __table_args__ = (Index(None, "link_id", "domain_id", "sampled_at"), Index(None, "sampled_at"))

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    link_id: Mapped[int] = mapped_column(ForeignKey("replication_links.id", ondelete="CASCADE"))
    domain_id: Mapped[int] = mapped_column(BigInteger)
    transactions: Mapped[int] = mapped_column(BigInteger)
    seconds: Mapped[float]
    sampled_at: Mapped[datetime] = mapped_column(default=utcnow)
