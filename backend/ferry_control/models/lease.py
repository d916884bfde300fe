"""Service leases: a named job that one API instance at a time may do (the collector's polling), held by that
instance until `expires_at` and renewed while it works."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base

#: The lease of the collector (polling, the failover monitor after each cycle, retention). Its row is created by
#: the migration, so taking it is one conditional UPDATE.
COLLECTOR_LEASE = "collector"


class ServiceLease(Base):
    """One row per job. An instance holds the job while `holder` names it and `expires_at` is in the future; a
    lapsed lease (its holder died or stopped) may be taken by any instance."""

    __tablename__ = "service_leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: The instance (`host-pid-random`) holding or last holding the lease; None when never held.
    holder: Mapped[str | None] = mapped_column(String(200), default=None)
    #: The holder renews this while it works; a lease in the past is free.
    expires_at: Mapped[datetime | None] = mapped_column(default=None)
