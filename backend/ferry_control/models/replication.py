"""Replication links: one per named replica connection (as the replica reports it), or, for a replica whose admin
address is unknown, the stream its master reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Enum, ForeignKey, Index, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.core.enums import LinkSource
from ferry_control.models.base import Base, utcnow


class ReplicationLink(Base):
    __tablename__ = "replication_links"
    __table_args__ = (
        UniqueConstraint("replica_server_id", "name"),
        Index(None, "cluster_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"))
    replica_server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    #: The connection's name on the replica (None when only the master reported the stream).
    name: Mapped[str | None] = mapped_column(String(64), default=None)
    source: Mapped[LinkSource] = mapped_column(
        Enum(LinkSource, native_enum=False, create_constraint=True, length=16), default=LinkSource.replica
    )
    #: The master's protocol address as the replica names it.
    master_address: Mapped[str | None] = mapped_column(String(300), default=None)
    #: The registered server at that address, when there is one.
    master_server_id: Mapped[int | None] = mapped_column(ForeignKey("servers.id", ondelete="SET NULL"), default=None)
    running: Mapped[bool] = mapped_column(default=False)
    io_state: Mapped[str | None] = mapped_column(String(32), default=None)
    sql_state: Mapped[str | None] = mapped_column(String(32), default=None)
    #: The receiving side waits for the applier to free relay log space (at the connection's space limit).
    waiting_for_relay_space: Mapped[bool] = mapped_column(default=False, server_default=false())
    received_position: Mapped[str | None] = mapped_column(Text, default=None)
    applied_position: Mapped[str | None] = mapped_column(Text, default=None)
    #: Per domain (text key): {"transactions": n, "seconds": s}; transactions against the master's binlog position.
    lag: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: The connection's settings as the replica reports them (`drivers.base.ConnectionSettings` as a dict); None
    #: when it does not say.
    settings: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    #: The server's own words for what the applier is doing (MariaDB: Slave_SQL_Running_State), when it gives them.
    sql_state_detail: Mapped[str | None] = mapped_column(Text, default=None)
    #: Per domain (text key), when the collector last saw `applied_position` move there (or first saw the domain), as
    #: ISO 8601 text: how long the SQL side has made no progress in it (a parallel applier stalls one domain alone).
    applied_moved_at: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    last_error_side: Mapped[str | None] = mapped_column(String(8), default=None)
    last_error_code: Mapped[str | None] = mapped_column(String(64), default=None)
    last_error_message: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
