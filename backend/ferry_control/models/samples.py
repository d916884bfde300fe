"""Time series the collector keeps: per-domain GTID positions and per-link, per-domain lag (kept past its link's
removal). Both are change-only (a row is written when the value changed) and downsampled then deleted by the
retention job."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text
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
    """A replication link's lag in one domain. It names its link's cluster, replica, master and connection itself
    and outlives the link (no foreign key on `link_id`): a server promoted since keeps its lag history as a replica
    for the whole range; it goes with its cluster or its replica server."""

    __tablename__ = "lag_samples"
    __table_args__ = (
        Index(None, "link_id", "domain_id", "sampled_at"),
        Index(None, "sampled_at"),
        Index(None, "cluster_id", "sampled_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    #: The link's id, kept once the link is gone (the series' key).
    link_id: Mapped[int]
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"))
    replica_server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    master_server_id: Mapped[int | None] = mapped_column(default=None)
    connection: Mapped[str | None] = mapped_column(String(64), default=None)
    domain_id: Mapped[int] = mapped_column(BigInteger)
    transactions: Mapped[int] = mapped_column(BigInteger)
    seconds: Mapped[float]
    sampled_at: Mapped[datetime] = mapped_column(default=utcnow)
