"""Discovery shapes: the seed server to register, and what was found from it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ferry_control.core.enums import ServerKind
from ferry_control.schemas.server import Host, ServerRead


class DiscoveryRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"host": "127.0.0.1", "protocol_port": 7302, "admin_port": 7402}]},
    )

    kind: ServerKind = ServerKind.ferry
    host: Host
    protocol_port: int = Field(ge=1, le=65535)
    admin_port: int = Field(ge=1, le=65535)
    name: str | None = Field(None, min_length=1, max_length=100)


class DiscoveryNote(BaseModel):
    registered_server_id: int | None = Field(None, description="The registered server the note is about.")
    message: str


class DiscoveryResult(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "seed": {"id": 1, "name": "127.0.0.1:7302"},
                    "added": [],
                    "known": [],
                    "notes": [
                        {"registered_server_id": 5, "message": "admin address unknown: replica seen from 127.0.0.1"}
                    ],
                }
            ]
        }
    )

    seed: ServerRead
    added: list[ServerRead] = Field(description="Servers registered by this discovery.")
    known: list[ServerRead] = Field(description="Servers found that were registered already.")
    notes: list[DiscoveryNote] = Field(description="What could not be established (unknown addresses, errors).")
