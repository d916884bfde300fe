"""The proxies in front of a cluster, as they say it."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ProxyServerState(BaseModel):
    registered_server_id: int
    writer: str | None = Field(description="Its state in the writer backend (UP, DOWN, DRAIN, MAINT, …).")
    reader: str | None = Field(description="Its state in the reader backend.")


class ProxyStateRead(BaseModel):
    proxy: str = Field(description="The admin socket, as the haproxy_admin_sockets setting names it.")
    reachable: bool
    error: str | None
    writer_addresses: list[str] = Field(description="Where applications write (the writer frontend's addresses).")
    reader_addresses: list[str] = Field(description="Where applications read (the reader frontend's addresses).")
    writer_registered_server_id: int | None = Field(
        description="The server writes go to now: the first up in the writer backend (`balance first`); None: none."
    )
    servers: list[ProxyServerState]
