"""A rewind archive as the API lists it (its bytes are downloaded apart: GET …/archives/{id})."""

from __future__ import annotations

from datetime import datetime

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ferry_control.schemas.operation_results import CutDomain


class RewindArchiveRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    cluster_id: int
    registered_server_id: int | None = Field(
        validation_alias=AliasChoices("registered_server_id", "server_id"),
        description="The registered server the rewind cut (null once it left the cluster).",
    )
    server_label: str
    operation_id: int | None = Field(description="The rejoin that cut these transactions.")
    name: str = Field(description="The archive's name on the server, which keeps its own copy.")
    cut: list[CutDomain] = Field(description="The cut GTIDs per domain, oldest first.")
    size_bytes: int
    created_at: datetime
