"""Server shapes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ferry_control.core.enums import HealthState, PromotionRule, ServerKind, ServerOrigin
from ferry_control.core.outbound import check_host

Port = int
#: A host name or an IP literal: no scheme, port, path or spaces (an IPv6 literal is kept without brackets).
Host = Annotated[
    str,
    Field(min_length=1, max_length=255, examples=["db1.example.internal", "10.0.0.5"]),
    AfterValidator(check_host),
]


#: The meaning of `replicas_may_be_ahead` (servers and topology nodes).
REPLICAS_MAY_BE_AHEAD = (
    "The server sends transactions to its replicas before they are durable in its own binlog (ferryd: durability "
    "none or network; MariaDB: sync_binlog other than 1): after a crash of its machine its replicas may hold "
    "transactions its binlog lost, so it must rejoin as a replica of whoever has them rather than serve as a master "
    "again. None: not read yet."
)


#: The meaning of `promotion_rule`.
PROMOTION_RULE = (
    "Whether a failover or switchover may make this server a master: `prefer` first, `neutral`, `prefer_not` only "
    "when no better server can take over (a failover then moves the role on to a better one in a second operation), "
    "`must_not` never. A delayed replica is never promoted automatically, whatever its rule."
)


#: The longest maintenance one may set, and the shortest (a maintenance ends by itself at its expiry).
MAINTENANCE_MAX_S = 7 * 24 * 3600
MAINTENANCE_MIN_S = 1
REASON_MAX = 500


class MaintenanceEnd(BaseModel):
    """When a maintenance ends by itself: `duration_s` from now, or `until` (exactly one; checked when it starts)."""

    duration_s: int | None = Field(
        None,
        description=f"Seconds from now until it ends by itself, {MAINTENANCE_MIN_S} to {MAINTENANCE_MAX_S} (7 days).",
    )
    until: datetime | None = Field(
        None, description="When it ends by itself, with its time zone: after now and at most 7 days from now."
    )


class MaintenanceStart(MaintenanceEnd):
    """What putting a server in maintenance takes: why, and when it ends by itself (`duration_s` from now, or
    `until`; exactly one). Who set it is the caller's token, never the body."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"reason": "disk swap", "duration_s": 7200}]}
    )

    reason: str = Field(min_length=1, max_length=REASON_MAX, description="Why, for whoever looks at the server.")


class ServerCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"name": "node1", "host": "127.0.0.1", "protocol_port": 7301, "admin_port": 7401}]
        },
    )

    name: str | None = Field(None, min_length=1, max_length=100, description="Defaults to host:protocol_port.")
    kind: ServerKind = ServerKind.ferry
    host: Host
    protocol_port: int | None = Field(
        None, ge=1, le=65535, description="Where clients and replicas connect; how replicas name their master."
    )
    admin_port: int | None = Field(None, ge=1, le=65535, description="The admin API; unset: not polled.")
    labels: dict[str, str] = Field(default_factory=dict, examples=[{"rack": "r4", "az": "b"}])
    maintenance: MaintenanceStart | None = Field(
        None, description="Register it in maintenance: a reason and an end, as PUT …/maintenance takes them."
    )
    promotion_rule: PromotionRule = Field(PromotionRule.neutral, description=PROMOTION_RULE)

    @field_validator("maintenance", mode="before")
    @classmethod
    def _maintenance_object(cls, value: Any) -> Any:
        if value is False:
            return None
        if value is True:
            raise ValueError(
                "registering a server in maintenance takes a reason and an end: "
                '{"reason": "…", "duration_s": 3600} (or "until")'
            )
        return value


class ServerUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"promotion_rule": "prefer"}]})

    name: str | None = Field(None, min_length=1, max_length=100)
    host: Host | None = None
    protocol_port: int | None = Field(None, ge=1, le=65535)
    admin_port: int | None = Field(None, ge=1, le=65535)
    labels: dict[str, str] | None = None
    promotion_rule: PromotionRule | None = Field(None, description=PROMOTION_RULE)

    @model_validator(mode="before")
    @classmethod
    def _no_maintenance(cls, data: Any) -> Any:
        if isinstance(data, dict) and "maintenance" in data:
            raise ValueError(
                "maintenance is set with PUT /clusters/{cluster_id}/servers/{registered_server_id}/maintenance "
                "(it takes a reason and an end)"
            )
        return data


class MaintenanceUpdate(MaintenanceEnd):
    """Start maintenance (`maintenance: true` with a reason and `duration_s` or `until`) or end it
    (`maintenance: false`, nothing else)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"maintenance": True, "reason": "disk swap", "duration_s": 7200}, {"maintenance": False}]
        },
    )

    maintenance: bool
    reason: str | None = Field(
        None, min_length=1, max_length=REASON_MAX, description="Why (required to start maintenance)."
    )


class MaintenanceRead(BaseModel):
    """The maintenance a server is in now."""

    model_config = ConfigDict(from_attributes=True)

    owner: str | None = Field(description="The name of the token that set it (None: set before owners were recorded).")
    reason: str | None
    since: datetime | None
    until: datetime | None = Field(
        description="When it ends by itself (None: never — only maintenance set before expiries were recorded)."
    )


class MasterRoleRead(BaseModel):
    """Its master-side semi-sync as the last poll read it (MariaDB: rpl_semi_sync_master_*)."""

    semi_sync: bool | None = None
    semi_sync_timeout_ms: int | None = None
    semi_sync_wait_point: str | None = Field(
        None, description="AFTER_SYNC (a commit is visible only once a replica has it) or AFTER_COMMIT."
    )


class ServerRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 3,
                    "cluster_id": 1,
                    "name": "node1",
                    "label": "node1 (server_id 1)",
                    "kind": "ferry",
                    "host": "127.0.0.1",
                    "protocol_port": 7301,
                    "admin_port": 7401,
                    "labels": {},
                    "maintenance": False,
                    "maintenance_detail": None,
                    "promotion_rule": "neutral",
                    "origin": "registered",
                    "fenced": False,
                    "fenced_at": None,
                    "fence_reason": None,
                    "approved": True,
                    "approved_by": "ops-admin",
                    "approved_at": "2026-11-21T13:00:00Z",
                    "health": "healthy",
                    "consecutive_failures": 0,
                    "last_seen_at": "2026-11-21T13:00:01Z",
                    "last_error": None,
                    "reported_server_id": 1,
                    "read_only": False,
                    "version": "ferryd (admin API v1)",
                    "gtid_binlog_pos": "1-1-45,2-1-20",
                    "gtid_slave_pos": "",
                    "gtid_current_pos": "1-1-45,2-1-20",
                    "created_at": "2026-11-21T13:00:00Z",
                    "updated_at": "2026-11-21T13:00:01Z",
                }
            ]
        },
    )

    id: int
    cluster_id: int
    name: str
    label: str = Field(
        description="How every message, operation step and CLI line names the server: its name and the server_id it "
        "last reported, e.g. `db-3 (server_id 3)` (`server_id not read yet` before its first poll)."
    )
    kind: ServerKind
    host: str
    protocol_port: int | None
    admin_port: int | None
    labels: dict[str, str]
    maintenance: bool = Field(
        description="In maintenance now (kept out of orchestration): set, and its end not reached. A maintenance "
        "ends by itself at its `until`, whether or not the worker has cleared it yet."
    )
    maintenance_detail: MaintenanceRead | None = Field(
        None,
        description="Who set the maintenance it is in, why, since and until when; None when not in maintenance.",
    )
    promotion_rule: PromotionRule = Field(PromotionRule.neutral, description=PROMOTION_RULE)
    origin: ServerOrigin
    fenced: bool = Field(description="Replaced by a failover: kept read-only, not repointed automatically.")
    fenced_at: datetime | None
    fence_reason: str | None
    approved: bool = Field(
        description="The control plane connects to its address (and sends it its cluster's credentials): approved "
        "by an admin's token or the deployment's `server_trusted_hosts`. False: pending — registered, discovered or "
        "moved by an operator elsewhere; never contacted until an admin approves it (POST …/approve)."
    )
    approved_by: str | None = Field(
        description="Who approved its address: an admin token's name, `server_trusted_hosts`, or `command line`; "
        "None when pending or approved before approvals were recorded."
    )
    approved_at: datetime | None
    health: HealthState
    consecutive_failures: int
    last_seen_at: datetime | None = Field(
        description="The collector's last successful poll. `read_only` and the gtid_* positions are what that poll "
        "reported: they are kept through any number of failed polls (`consecutive_failures`, `health`)."
    )
    last_error: str | None
    reported_server_id: int | None
    read_only: bool | None
    binlog_format: str | None = Field(
        None,
        description="How it writes its binlog as the last poll read it (MariaDB: @@binlog_format); None when "
        "the server does not say (ferryd: always row changes).",
    )
    version: str | None = Field(
        None, description="The server software's version as the last poll read it (MariaDB: @@version)."
    )
    replicas_may_be_ahead: bool | None = Field(None, description=REPLICAS_MAY_BE_AHEAD)
    master_role: MasterRoleRead | None = Field(
        None,
        description="Its master-side semi-sync as the last poll read it; None when not read or the kind has none "
        "(ferryd's durability is a start-up flag).",
    )
    gtid_binlog_pos: str | None
    gtid_slave_pos: str | None
    gtid_current_pos: str | None
    created_at: datetime
    updated_at: datetime
