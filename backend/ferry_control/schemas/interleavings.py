"""Interleavings: every server's transactions within a window (by count, by time or by GTID range), aligned by
GTID, with how far behind the window's newest end each server is."""

from __future__ import annotations

from typing import Literal

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


class NeverReceived(BaseModel):
    domain: int
    origin_server_id: int = Field(description="The server_id in the GTIDs concerned: where they are written.")
    reason: str = Field(
        description="Why this server will never hold them: not downstream of their origin, or a connection's domain "
        "or server filter (DO_DOMAIN_IDS, IGNORE_DOMAIN_IDS, IGNORE_SERVER_IDS) drops them on the way."
    )


class ServerEvents(BaseModel):
    registered_server_id: int
    name: str
    transactions: list[ServerTransaction] = Field(description="Newest first, as the server's binlog holds them.")
    error: str | None = Field(
        None,
        description="Why this server's events are missing (unreachable, no address, no answer within "
        "heavy_read_timeout_s…); the other servers are shown all the same.",
    )
    position: dict[int, int] = Field(
        default_factory=dict,
        description="The server's position as the collector last read it (gtid_current_pos): per domain, the seq_no "
        "it has reached. A GTID it lacks that is past its position there is one it has not received yet.",
    )
    never: list[NeverReceived] = Field(
        default_factory=list,
        description="The (domain, origin) pairs among the GTIDs shown that this server will never receive, and why "
        "(from the replication graph and its connections' filters as the collector last saw them).",
    )
    reached: dict[int, int] = Field(
        default_factory=dict,
        description="Per domain, the seq_no this server has reached: the most of its position as the collector "
        "read it and the newest transaction its binlog showed in this read.",
    )
    behind: dict[int, int] = Field(
        default_factory=dict,
        description="Per domain, how many transactions (seq_nos) it lacks of the window's newest end "
        "(window.newest − reached); a domain it is level in, or will never receive, is not listed.",
    )
    truncated: bool = Field(
        False,
        description="The read stopped at `limit` transactions before reaching the window's start: older ones in the "
        "window are not listed.",
    )


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


class InterleavingWindow(BaseModel):
    kind: Literal["count", "time", "gtid"] = Field(
        description="count: the newest `limit` transactions of each server; time: the last `last_s` seconds of "
        "writes; gtid: the range from/to per domain."
    )
    last_s: int | None = None
    limit: int = Field(description="Transactions listed per server at most.")
    from_seq: dict[int, int] = Field(
        description="Per domain, the window's oldest seq_no (inclusive); for a time window, one past what the "
        "cluster's servers had reached last_s seconds ago as the collector recorded it. A domain not listed starts "
        "at its first transaction."
    )
    to_seq: dict[int, int] | None = Field(description="Per domain, the window's newest seq_no (inclusive).")
    domains: list[int] | None = Field(description="Only these domains (a GTID range's); null: every domain.")
    newest: dict[int, int] = Field(
        description="Per domain, the window's newest end: the most any answering server has reached (at most to)."
    )


class Interleavings(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "cluster_id": 1,
                    "servers": [{"registered_server_id": 1, "name": "node1", "transactions": [], "error": None}],
                    "union": [{"gtid": "1-1-45", "domain": 1, "origin_server_id": 1, "seq_no": 45,
                               "commit_ts_us": 1795267642793111, "positions": {"1": 0, "2": 0}}],
                }
            ]
        }
    )  # fmt: skip

    cluster_id: int
    servers: list[ServerEvents]
    union: list[AlignedTransaction] = Field(description="Every GTID seen on any server, oldest first.")
    window: InterleavingWindow
