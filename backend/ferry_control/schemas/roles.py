"""A server's role as a proxy's health check reads it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RoleRead(BaseModel):
    registered_server_id: int
    role: Literal["writer", "reader"]
    reason: str = Field(description="Why the server holds the role (200) or does not (503, in the error message).")
