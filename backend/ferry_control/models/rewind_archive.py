"""The archives of rewinds: the transactions a rejoin's rewind cut from an old master, as the binlog file the server
wrote of them before cutting, downloaded and kept here (the server keeps its own copy), with the cut GTIDs per
domain and the operation that cut them. The bytes are application data: only operators and admins read them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base, utcnow


class RewindArchive(Base):
    __tablename__ = "rewind_archives"

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"), index=True)
    #: The server the rewind cut (None once it is removed from the cluster; `server_label` still names it).
    server_id: Mapped[int | None] = mapped_column(ForeignKey("servers.id", ondelete="SET NULL"), default=None)
    server_label: Mapped[str] = mapped_column(String(300))
    operation_id: Mapped[int | None] = mapped_column(ForeignKey("operations.id", ondelete="SET NULL"), default=None)
    #: The archive's name on the server (where it keeps its own copy).
    name: Mapped[str] = mapped_column(String(200))
    #: The cut GTIDs per domain, oldest first: `[{"domain": 1, "gtids": ["1-1-5", …]}, …]`.
    cut: Mapped[list[Any]] = mapped_column(JSON, default=list)
    size_bytes: Mapped[int] = mapped_column()
    #: The binlog file's bytes (loaded only when downloaded).
    content: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
