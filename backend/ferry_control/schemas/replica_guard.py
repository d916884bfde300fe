"""The replica guard's per-server setting: the domains an admin made a replicating server writable for."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Most domains one server may be made writable for.
WRITABLE_DOMAINS_MAX = 64

Domain = Annotated[int, Field(ge=0, le=2**32 - 1)]


class WritableDomainsUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"domains": [3]}]})

    domains: list[Domain] = Field(
        max_length=WRITABLE_DOMAINS_MAX,
        description="The domains this replicating server originates (a multi-source replica that also takes its own "
        "writes, each in a domain no master of it writes): the replica guard leaves it writable, and its own "
        "transactions in these domains are not errant. Empty: it is a replica like any other (read-only).",
    )

    @field_validator("domains")
    @classmethod
    def _distinct(cls, domains: list[int]) -> list[int]:
        repeated = sorted({d for d in domains if domains.count(d) > 1})
        if repeated:
            raise ValueError(f"domain{'s' if len(repeated) > 1 else ''} {', '.join(map(str, repeated))} given twice")
        return sorted(domains)


class WritableDomainsRead(BaseModel):
    registered_server_id: int
    writable_domains: list[int]
    set_by: str | None = Field(description="The admin token's name that set them last (None: never set).")
    set_at: datetime | None
