"""What the replica guard keeps per server beside the server's own row: the domains an operator made a replica
writable for (a multi-source replica that originates its own domains), and the errant transactions the guard last
found on it, per domain, with when each was first seen (services/replica_guard.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base, utcnow


class ReplicaGuard(Base):
    __tablename__ = "replica_guard"

    server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"), primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"), index=True)
    #: Domains this server originates although it replicates (set by an admin): the guard leaves it writable, and
    #: its own transactions in these domains are not errant. Empty: a replica is read-only.
    writable_domains: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    #: Who set `writable_domains` last and when (None: never set).
    writable_set_by: Mapped[str | None] = mapped_column(String(100), default=None)
    writable_set_at: Mapped[datetime | None] = mapped_column(default=None)
    #: Per domain (services/errant.py `ErrantDomain` as a dict, with `since`: when the guard first saw it), as of the
    #: guard's last look at the server and its masters.
    errant: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
