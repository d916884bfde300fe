"""Cluster shapes."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


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


class ClusterUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"description": "moved to rack 4"}]})

    name: str | None = Field(None, min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str | None = Field(None, max_length=2000)
    admin_port_offset: int | None = Field(None, ge=-65535, le=65535)
    node_token_file: str | None = Field(None, max_length=1000)


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
    created_at: datetime
    updated_at: datetime
