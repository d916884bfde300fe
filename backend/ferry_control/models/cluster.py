"""A cluster: servers replicating among themselves, watched and operated as one; and its operation lock."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String, Text, false, true
from sqlalchemy.orm import Mapped, mapped_column

from ferry_control.models.base import Base, utcnow


class Cluster(Base):
    __tablename__ = "clusters"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    #: Discovery: a discovered master's admin port is its protocol port plus this (None: unknown, recorded as such).
    admin_port_offset: Mapped[int | None] = mapped_column(default=None)
    #: The cluster's secrets (node token, database credentials) as one Fernet token of their JSON (core/secrets.py);
    #: never returned by the API. None: the cluster has none (ferry nodes use the FERRY_NODE_TOKEN setting).
    credentials_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    #: How the control plane reaches the cluster's hosts for a rebuild (`schemas.host_access.HostAccessSettings`
    #: without the key): SSH user and port, known_hosts lines, stop/start commands, donor lag pause. None: not set.
    host_access: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    #: That login's private key, one Fernet token (core/secrets.py) as the credentials are; never returned.
    host_access_key_ciphertext: Mapped[str | None] = mapped_column(Text, default=None)
    #: Automatic failover when the master is lost (off by default).
    auto_failover: Mapped[bool] = mapped_column(default=False)
    #: A fenced former master that answers again rejoins as a replica by itself (when it has nothing others lack).
    auto_rejoin: Mapped[bool] = mapped_column(default=False, server_default=false())
    #: The replica guard makes a replica that is seen writable read-only again (services/replica_guard.py); off, it
    #: is only flagged.
    enforce_read_only_replicas: Mapped[bool] = mapped_column(default=True, server_default=true())
    #: The candidate's parallel apply workers during a switchover's or drill's catch-up (0: not raised).
    catch_up_parallel_workers: Mapped[int] = mapped_column(default=0, server_default="0")
    #: The write-unavailability budget of the cluster's switchovers and drills (None: `switchover_max_window_s`).
    max_window_s: Mapped[float | None] = mapped_column(default=None)
    #: Set by a failover; automatic failover stays off until an operator acknowledges (clears it).
    failover_suspended_at: Mapped[datetime | None] = mapped_column(default=None)
    last_failover_at: Mapped[datetime | None] = mapped_column(default=None)
    last_failover_operation_id: Mapped[int | None] = mapped_column(default=None)
    #: Webhook URLs called before / after every operation on this cluster (besides the settings' ones).
    #: Labels a promoted server must share with the server it replaces (e.g. ["dc"]: stay in the same data centre).
    candidate_labels: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    pre_operation_webhooks: Mapped[list[Any]] = mapped_column(JSON, default=list)
    post_operation_webhooks: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class OperationLock(Base):
    """One row per cluster. Claiming it locks the row (SELECT … FOR UPDATE on PostgreSQL, so claims are serialised
    across API instances); the claimer records its operation in `operation_id` and commits. The operation holds
    the cluster until it clears `operation_id` or its lease runs out (its instance died)."""

    __tablename__ = "operation_locks"

    cluster_id: Mapped[int] = mapped_column(ForeignKey("clusters.id", ondelete="CASCADE"), primary_key=True)
    #: The operation running now, if any.
    operation_id: Mapped[int | None] = mapped_column(ForeignKey("operations.id", ondelete="SET NULL"), default=None)
    acquired_at: Mapped[datetime | None] = mapped_column(default=None)
    #: The holder renews this while it runs; a lease in the past belongs to a dead API instance.
    lease_expires_at: Mapped[datetime | None] = mapped_column(default=None)
    #: Bumped each time the lock is taken: the holder checks its token before every step that changes a server,
    #: so an operation whose lock was taken over (its lease lapsed) stops instead of acting on stale authority.
    fencing_token: Mapped[int] = mapped_column(default=0, server_default="0")
