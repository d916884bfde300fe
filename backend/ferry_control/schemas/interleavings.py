"""Interleavings: the recent transactions of every server, aligned by GTID."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ServerTransaction(BaseModel):
    gtid: str
    domain: int
    origin_server_id: int = Field(description="The server_id in the GTID: where the transaction was first written.")
    seq_no: int
    commit_id: int | None = Field(description="Transactions sharing it were group-committed together on this server.")
    commit_ts_us: int | None
    file: str | None
    offset: int | None
    tables: list[str]
    rows: int | None


class ServerEvents(BaseModel):
    server_id: int
    name: str
    transactions: list[ServerTransaction] = Field(description="Newest first, as the server's binlog holds them.")
    error: str | None = Field(None, description="Why this server's events are missing (unreachable, no address…).")


class AlignedTransaction(BaseModel):
    gtid: str
    domain: int
    origin_server_id: int
    seq_no: int
    commit_ts_us: int | None = Field(
        description="Commit time on its origin server when that server is listed, else the earliest seen."
    )
    positions: dict[int, int] = Field(
        description="Per registered server id that has it: its index in that server's list (0 = newest)."
    )


class Interleavings(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "cluster_id": 1,
                    "servers": [{"server_id": 1, "name": "node1", "transactions": [], "error": None}],
                    "union": [{"gtid": "1-1-45", "domain": 1, "origin_server_id": 1, "seq_no": 45,
                               "commit_ts_us": 1795267642793111, "positions": {"1": 0, "2": 0}}],
                }
            ]
        }
    )  # fmt: skip

    cluster_id: int
    servers: list[ServerEvents]
    union: list[AlignedTransaction] = Field(description="Every GTID seen on any server, oldest first.")
