"""Cluster shapes. A cluster's secrets (node token, database credentials) are write-only: they are accepted on
create and update, stored encrypted, and read back only as `…_set` flags."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, field_validator

from ferry_control.core.outbound import check_webhook_syntax

WebhookUrl = Annotated[
    str,
    Field(pattern=r"^https?://[^\s]+$", max_length=1000, examples=["https://hooks.example/ferry"]),
    AfterValidator(check_webhook_syntax),
]
WEBHOOKS_MAX = 10
#: What a viewer sees instead of a webhook URL (URLs often carry a secret in their path or query).
REDACTED = "[redacted]"

_Secret = Annotated[SecretStr, Field(min_length=1, max_length=200)]


#: The meaning of `enforce_read_only_replicas`.
ENFORCE_READ_ONLY_REPLICAS = (
    "A server that replicates (it has a replication connection) and answers writable is made read-only again by "
    "the control plane at once (audited, an event and the read_only_enforcement_webhooks), unless an admin made it "
    "writable for its own domains; never while an operation runs on the cluster, nor on a server in maintenance "
    "(flagged instead). Off: such a replica is only flagged (a standing problem, an event and the webhooks). "
    "Turning it off (or creating a cluster with it off) needs an admin token: 403 `guard_off_needs_admin` for an "
    "operator."
)

#: The meaning of `catch_up_parallel_workers`, and its bound (ferryd's most apply workers per connection).
CATCH_UP_PARALLEL_WORKERS = (
    "During a switchover's or a drill's catch-up, the candidate's parallel apply is raised to this many workers "
    "(its mode kept when parallel, else optimistic; one domain may use them all), and put back afterwards whatever "
    "the outcome (after a crash, by the reconciler). 0: off."
)
CATCH_UP_PARALLEL_WORKERS_MAX = 256

#: The meaning of `auto_rejoin`.
AUTO_REJOIN = (
    "A fenced former master (replaced by a failover) that answers again rejoins by itself as a read-only replica of "
    "the new master — only when it has no transaction the new master lacks; otherwise it stays fenced and its own "
    "transactions are listed (the rejoin operation's result). Off: an operator starts the rejoin."
)

#: The meaning of `max_window_s`.
MAX_WINDOW = (
    "The write-unavailability budget of this cluster's switchovers and drills, in seconds: before the master goes "
    "read-only, the candidate catches up while the master keeps taking writes until the predicted window "
    "(transactions behind / its apply rate) fits this. An operation's own max_window_s wins. Null: the control "
    "plane's switchover_max_window_s (10 s by default)."
)
MaxWindow = Annotated[float, Field(gt=0, le=3600)]

#: A server label's name, as `candidate_labels` lists them.
LabelName = Annotated[str, Field(min_length=1, max_length=100)]
LABELS_MAX = 20
#: The meaning of `candidate_labels`.
CANDIDATE_LABELS = (
    'Labels a promoted server must share with the server it replaces (e.g. ["dc"]: a failover or switchover stays '
    "within the old master's data centre); a server without one of them is not a candidate."
)


class ClusterSecrets(BaseModel):
    """Write-only secrets of a cluster, sent only to that cluster's servers. In an update, a field left out is
    kept, `null` removes it."""

    node_token: _Secret | None = Field(
        None,
        description="The admin token of this cluster's ferryd nodes (16+ characters); overrides FERRY_NODE_TOKEN.",
    )
    db_user: _Secret | None = Field(None, description="MariaDB servers: the control plane's login.")
    db_password: _Secret | None = Field(None, description="MariaDB servers: its password.")
    replication_user: _Secret | None = Field(None, description="MariaDB servers: the login replicas connect with.")
    replication_password: _Secret | None = Field(None, description="MariaDB servers: its password.")
    tls_ca: Annotated[SecretStr, Field(min_length=1, max_length=20000)] | None = Field(
        None,
        description="MariaDB servers: the CA certificate (PEM text, not a path) their certificates are verified "
        "against; unset: the servers are spoken to in clear text.",
    )


class ClusterCreate(ClusterSecrets):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"name": "orders", "description": "orders service", "admin_port_offset": 100}]},
    )

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = Field("", max_length=2000)
    admin_port_offset: int | None = Field(
        None,
        ge=-65535,
        le=65535,
        description="Discovery: a discovered master's admin port is its protocol port plus this. Unset: unknown.",
    )
    auto_failover: bool = Field(False, description="Fail over automatically when the master is lost (confirmed).")
    auto_rejoin: bool = Field(False, description=AUTO_REJOIN)
    enforce_read_only_replicas: bool = Field(True, description=ENFORCE_READ_ONLY_REPLICAS)
    candidate_labels: list[LabelName] = Field(
        default_factory=list, max_length=LABELS_MAX, description=CANDIDATE_LABELS, examples=[["dc"]]
    )
    pre_operation_webhooks: list[WebhookUrl] = Field(
        default_factory=list,
        max_length=WEBHOOKS_MAX,
        description="POSTed before an operation changes anything; a failure (not 2xx, no answer) aborts the operation.",
    )
    post_operation_webhooks: list[WebhookUrl] = Field(
        default_factory=list, max_length=WEBHOOKS_MAX, description="POSTed when an operation has ended."
    )
    catch_up_parallel_workers: int = Field(
        0, ge=0, le=CATCH_UP_PARALLEL_WORKERS_MAX, description=CATCH_UP_PARALLEL_WORKERS, examples=[8]
    )
    max_window_s: MaxWindow | None = Field(None, description=MAX_WINDOW, examples=[30])


class ClusterUpdate(ClusterSecrets):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"description": "moved to rack 4"}]})

    name: str | None = Field(None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str | None = Field(None, max_length=2000)
    admin_port_offset: int | None = Field(None, ge=-65535, le=65535)
    auto_failover: bool | None = None
    auto_rejoin: bool | None = Field(None, description=AUTO_REJOIN + " Not null.")
    enforce_read_only_replicas: bool | None = Field(None, description=ENFORCE_READ_ONLY_REPLICAS)
    candidate_labels: list[LabelName] | None = Field(None, max_length=LABELS_MAX, description=CANDIDATE_LABELS)
    pre_operation_webhooks: list[WebhookUrl] | None = Field(None, max_length=WEBHOOKS_MAX)
    post_operation_webhooks: list[WebhookUrl] | None = Field(None, max_length=WEBHOOKS_MAX)
    catch_up_parallel_workers: int | None = Field(
        None, ge=0, le=CATCH_UP_PARALLEL_WORKERS_MAX, description=CATCH_UP_PARALLEL_WORKERS + " Not null."
    )
    max_window_s: MaxWindow | None = Field(None, description=MAX_WINDOW + " Null here puts that default back.")

    @field_validator("catch_up_parallel_workers")
    @classmethod
    def _not_removed(cls, value: int | None) -> int | None:
        if value is None:
            raise ValueError("catch_up_parallel_workers cannot be removed: set 0 to turn it off")
        return value


class ClusterRead(BaseModel):
    model_config = ConfigDict(
        from_attributes=True,
        json_schema_extra={
            "examples": [
                {
                    "id": 1,
                    "name": "orders",
                    "description": "orders service",
                    "admin_port_offset": 100,
                    "node_token_set": False,
                    "db_user_set": False,
                    "db_password_set": False,
                    "replication_user_set": False,
                    "replication_password_set": False,
                    "tls_ca_set": False,
                    "plaintext_transport": True,
                    "auto_failover": False,
                    "enforce_read_only_replicas": True,
                    "candidate_labels": [],
                    "failover_suspended_at": None,
                    "last_failover_at": None,
                    "last_failover_operation_id": None,
                    "pre_operation_webhooks": [],
                    "post_operation_webhooks": [],
                    "created_at": "2026-11-21T13:00:00Z",
                    "updated_at": "2026-11-21T13:00:00Z",
                }
            ]
        },
    )

    id: int
    name: str
    description: str
    admin_port_offset: int | None
    node_token_set: bool = Field(False, description="The cluster has its own node token (never shown).")
    db_user_set: bool = False
    db_password_set: bool = False
    replication_user_set: bool = False
    replication_password_set: bool = False
    tls_ca_set: bool = False
    plaintext_transport: bool = Field(
        True,
        description="The control plane speaks to this cluster's servers in clear text (no TLS to the nodes is "
        "configured, or MariaDB credentials without a CA): tokens and credentials cross the network readable.",
    )
    auto_failover: bool
    auto_rejoin: bool = Field(False, description=AUTO_REJOIN)
    enforce_read_only_replicas: bool = Field(True, description=ENFORCE_READ_ONLY_REPLICAS)
    failover_suspended_at: datetime | None = Field(
        description="Set by a failover: automatic failover stays off until an operator acknowledges."
    )
    last_failover_at: datetime | None
    last_failover_operation_id: int | None
    candidate_labels: list[str] = Field(default_factory=list, description=CANDIDATE_LABELS)
    pre_operation_webhooks: list[str] = Field(description=f"Shown to viewers as {REDACTED!r} each.")
    post_operation_webhooks: list[str] = Field(description=f"Shown to viewers as {REDACTED!r} each.")
    catch_up_parallel_workers: int = Field(0, description=CATCH_UP_PARALLEL_WORKERS)
    max_window_s: float | None = Field(None, description=MAX_WINDOW)
    created_at: datetime
    updated_at: datetime
