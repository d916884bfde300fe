"""A server of a cluster (a ferryd node now, a MariaDB server later), what the collector last saw of it, and its
health transitions."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, BigInteger, Enum, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from ferry_control.core.enums import HealthState, PromotionRule, ServerKind, ServerOrigin
from ferry_control.core.naming import server_label
from ferry_control.models.base import Base, BigId, utcnow

if TYPE_CHECKING:
    from ferry_control.models.cluster import Cluster


@dataclass(frozen=True)
class MaintenanceWindow:
    """A server's current maintenance: who set it, why, since and until when (None: no end)."""

    owner: str | None
    reason: str | None
    since: datetime | None
    until: datetime | None


def _enum(kind: type[enum.Enum]) -> Enum:
    return Enum(kind, native_enum=False, create_constraint=True, length=32, validate_strings=True)


class Server(Base):
    __tablename__ = "servers"
    __table_args__ = (
        UniqueConstraint("cluster_id", "name"),
        UniqueConstraint("cluster_id", "host", "protocol_port"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[ServerKind] = mapped_column(_enum(ServerKind), default=ServerKind.ferry)
    host: Mapped[str] = mapped_column(String(255))
    #: Where clients and replicas connect (ferryd --listen); how replicas name their master.
    protocol_port: Mapped[int | None] = mapped_column(default=None)
    #: The admin API (ferryd --admin); None for a discovered server whose admin address is not known yet.
    admin_port: Mapped[int | None] = mapped_column(default=None)
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    #: An operator put it in maintenance (keep out of orchestration; still polled). Whether it is in maintenance
    #: now is `maintenance`: set and not past `maintenance_until`.
    maintenance_set: Mapped[bool] = mapped_column("maintenance", default=False)
    #: Who set it (the token's name), why, when, and until when (None: no end — only rows from before reasons and
    #: expiries were recorded).
    maintenance_owner: Mapped[str | None] = mapped_column(String(100), default=None)
    maintenance_reason: Mapped[str | None] = mapped_column(Text, default=None)
    maintenance_since: Mapped[datetime | None] = mapped_column(default=None)
    maintenance_until: Mapped[datetime | None] = mapped_column(default=None)
    #: Whether operations may promote it (see PromotionRule).
    promotion_rule: Mapped[PromotionRule] = mapped_column(
        _enum(PromotionRule), default=PromotionRule.neutral, server_default=PromotionRule.neutral.value
    )
    origin: Mapped[ServerOrigin] = mapped_column(_enum(ServerOrigin), default=ServerOrigin.registered)
    #: A master replaced by a failover: kept read-only whenever it answers, never repointed automatically.
    fenced: Mapped[bool] = mapped_column(default=False)
    fenced_at: Mapped[datetime | None] = mapped_column(default=None)
    fence_reason: Mapped[str | None] = mapped_column(Text, default=None)

    #: Who let the control plane connect to its current address and send it its cluster's credentials: an admin
    #: token's name, or `server_trusted_hosts` (services/approval.py); None with `approved_at` set: approved before
    #: approvals were recorded. `approved_at` None: pending — nothing connects to it until an admin approves it.
    approved_by: Mapped[str | None] = mapped_column(String(100), default=None)
    approved_at: Mapped[datetime | None] = mapped_column(default=None)

    health: Mapped[HealthState] = mapped_column(_enum(HealthState), default=HealthState.unknown)
    consecutive_failures: Mapped[int] = mapped_column(default=0)
    last_seen_at: Mapped[datetime | None] = mapped_column(default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)

    # What the last successful poll reported.
    reported_server_id: Mapped[int | None] = mapped_column(BigInteger, default=None, index=True)
    read_only: Mapped[bool | None] = mapped_column(default=None)
    #: When an operation last set `read_only` itself (services/orchestrator/routing.py): a poll from before then does
    #: not overwrite it.
    read_only_set_at: Mapped[datetime | None] = mapped_column(default=None)
    #: The server software's version as it reports it (MariaDB: @@version).
    version: Mapped[str | None] = mapped_column(String(200), default=None)
    #: How it writes its binlog as it reports it (MariaDB: @@binlog_format); None when it does not say.
    binlog_format: Mapped[str | None] = mapped_column(String(32), default=None)
    #: Sends transactions to replicas before they are durable here (ferryd durability none/network; MariaDB
    #: sync_binlog != 1): after a crash of its machine its replicas may be ahead of it.
    replicas_may_be_ahead: Mapped[bool | None] = mapped_column(default=None)
    #: Its master-side settings as the last poll read them (`drivers.base.MasterRole` as a dict; None: none read),
    #: what a failover gives the new master when this one no longer answers.
    master_role: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    #: What the last successful poll reported that an operator should look at, in words (see ServerStatus.warnings).
    warnings: Mapped[list[str]] = mapped_column(JSON, default=list)
    gtid_binlog_pos: Mapped[str | None] = mapped_column(Text, default=None)
    gtid_slave_pos: Mapped[str | None] = mapped_column(Text, default=None)
    gtid_current_pos: Mapped[str | None] = mapped_column(Text, default=None)

    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    # One way only: a cluster's servers are read by query, so the cluster model needs nothing of this module.
    cluster: Mapped[Cluster] = relationship()

    def in_maintenance(self, now: datetime | None = None) -> bool:
        """Set, and its expiry (if any) not reached at `now` (default: now)."""
        if not self.maintenance_set:
            return False
        return self.maintenance_until is None or self.maintenance_until > (now or utcnow())

    @property
    def maintenance(self) -> bool:
        """In maintenance now: what candidate choice, the failover monitor and every read go by. An expired one is
        out of maintenance at once, whether or not the worker has cleared it yet."""
        return self.in_maintenance()

    @property
    def maintenance_detail(self) -> MaintenanceWindow | None:
        """Who set the maintenance it is in now, why and until when; None when it is not in maintenance."""
        if not self.in_maintenance():
            return None
        return MaintenanceWindow(
            owner=self.maintenance_owner, reason=self.maintenance_reason,
            since=self.maintenance_since, until=self.maintenance_until,
        )  # fmt: skip

    @property
    def approved(self) -> bool:
        """The control plane may connect to it (and send it its cluster's credentials)."""
        return self.approved_at is not None

    @property
    def admin_address(self) -> str | None:
        if self.admin_port is None:
            return None
        return f"[{self.host}]:{self.admin_port}" if ":" in self.host else f"{self.host}:{self.admin_port}"

    @property
    def protocol_address(self) -> str | None:
        return None if self.protocol_port is None else f"{self.host}:{self.protocol_port}"

    @property
    def label(self) -> str:
        """How messages name it: its name and the server_id it last reported (core/naming.py)."""
        return server_label(self.name, self.reported_server_id)


class HealthEvent(Base):
    """A change of a server's health state (change-only: one row per transition)."""

    __tablename__ = "health_events"
    __table_args__ = (Index(None, "server_id", "at"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    server_id: Mapped[int] = mapped_column(ForeignKey("servers.id", ondelete="CASCADE"))
    state: Mapped[HealthState] = mapped_column(_enum(HealthState))
    detail: Mapped[str | None] = mapped_column(Text, default=None)
    at: Mapped[datetime] = mapped_column(default=utcnow)
