"""Cluster shapes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

WebhookUrl = Annotated[
    str, Field(pattern=r"^https?://[^\s]+$", max_length=1000, examples=["https://hooks.example/ferry"])
]
WEBHOOKS_MAX = 10


class ClusterCreate(BaseModel):
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
    node_token_file: str | None = Field(
        None, max_length=1000, description="A file with this cluster's node admin token (overrides the setting)."
    )
    auto_failover: bool = Field(False, description="Fail over automatically when the master is lost (confirmed).")
    pre_operation_webhooks: list[WebhookUrl] = Field(
        default_factory=list,
        max_length=WEBHOOKS_MAX,
        description="POSTed before an operation changes anything; a failure (not 2xx, no answer) aborts the operation.",
    )
    post_operation_webhooks: list[WebhookUrl] = Field(
        default_factory=list, max_length=WEBHOOKS_MAX, description="POSTed when an operation has ended."
    )


class ClusterUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"description": "moved to rack 4"}]})

    name: str | None = Field(None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str | None = Field(None, max_length=2000)
    admin_port_offset: int | None = Field(None, ge=-65535, le=65535)
    node_token_file: str | None = Field(None, max_length=1000)
    auto_failover: bool | None = None
    pre_operation_webhooks: list[WebhookUrl] | None = Field(None, max_length=WEBHOOKS_MAX)
    post_operation_webhooks: list[WebhookUrl] | None = Field(None, max_length=WEBHOOKS_MAX)


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
                    "node_token_file": None,
                    "auto_failover": False,
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
    node_token_file: str | None
    auto_failover: bool
    failover_suspended_at: datetime | None = Field(
        description="Set by a failover: automatic failover stays off until an operator acknowledges."
    )
    last_failover_at: datetime | None
    last_failover_operation_id: int | None
    pre_operation_webhooks: list[str]
    post_operation_webhooks: list[str]
    created_at: datetime
    updated_at: datetime
