"""API token shapes: the token itself appears once, in the creation answer."""

from __future__ import annotations

from datetime import datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from ferry_control.core.security import Capability, Role


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "ci", "role": "operator"}]})

    name: str = Field(min_length=1, max_length=100)
    role: Role
    expires_at: AwareDatetime | None = Field(
        None, description="When the token stops working (401 afterwards); unset: it does not expire."
    )


class TokenRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    role: Role
    display_prefix: str = Field(description="The token's first characters, to tell tokens apart.")
    created_at: datetime
    last_used_at: datetime | None = Field(
        description="When the token last authenticated (updated at most once per token_last_used_resolution_s)."
    )
    revoked_at: datetime | None
    expires_at: datetime | None


class TokenCreated(TokenRead):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"id": 2, "name": "ci", "role": "operator", "display_prefix": "ferry_Ab3dE9",
                 "created_at": "2026-11-21T13:00:00Z", "last_used_at": None, "revoked_at": None,
                 "expires_at": None, "token": "ferry_Ab3dE9…"}
            ]
        }
    )  # fmt: skip

    token: str = Field(description="The bearer token. Shown only now; only its keyed hash is stored.")


class Me(BaseModel):
    """The calling token: who it is and what it may do."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "ci", "role": "operator", "capabilities": ["can_read", "can_operate"], "expires_at": None}
            ]
        }
    )

    name: str
    role: Role
    capabilities: list[Capability] = Field(description="What the role allows, least first.")
    expires_at: datetime | None = Field(
        None, description="When the token stops working (a client may forget it then); unset: it does not expire."
    )
