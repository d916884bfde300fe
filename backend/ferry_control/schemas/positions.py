"""Positions: the current servers × domains matrix, and position and lag history."""

from __future__ import annotations

from datetime import datetime

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ferry_control.schemas.lag import LagVerdict


class PositionCell(BaseModel):
    gtid: str | None = Field(description="The server's GTID in this domain (from gtid_current_pos); None: none yet.")
    seq_no: int | None
    behind_transactions: int = Field(description="Transactions behind the most advanced server in this domain.")
    lag_seconds: float | None = Field(
        None,
        description="The replica's lag in seconds in this domain (on its connection whose lag is worst judged against "
        "its configured delay; see DomainLagRead.seconds); None on a server that replicates nothing there.",
    )
    lag: LagVerdict | None = Field(
        None, description="That connection's lag judged against its configured delay, with its words (services/lag.py)."
    )


class PositionRow(BaseModel):
    registered_server_id: int = Field(description="The control plane's id of the registered server (API paths).")
    server_id: int | None = Field(
        description="The server_id the server reports (MariaDB's @@server_id, the number in its GTIDs); null until "
        "read."
    )
    name: str
    health: str
    gtid_current_pos: str | None
    gtid_binlog_pos: str | None
    last_seen_at: datetime | None = Field(
        None,
        description="When these positions were read: the collector's last successful poll of the server. They are "
        "kept through any number of failed polls (then `health` says the server is unreachable).",
    )
    cells: dict[int, PositionCell] = Field(description="Per domain id.")
    ahead_of_all: bool = Field(
        description="Its position is ahead of every other server's (GtidPosition.is_ahead_of): it could be master now."
    )
    root_of: list[int] = Field(
        default_factory=list,
        description="The domains it is the origin of as a root (it has replicas and replicates from none; its GTIDs "
        "there carry its own server_id): of several masters, each is master of its own.",
    )
    ahead_in_own_domains: bool = Field(
        False,
        description="A root ahead of every other server in the domains it originates (`root_of`): it could be "
        "master of them now, though another master's domains are not its own.",
    )
    has_reached: bool | None = Field(None, description="With `reached=`: whether its position is ahead of that one.")


class PositionMatrix(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "cluster_id": 1,
                    "domains": [1, 2],
                    "most_advanced": "1-1-45,2-1-20",
                    "rows": [
                        {"registered_server_id": 3, "server_id": 1, "name": "node1", "health": "healthy",
                         "gtid_current_pos": "1-1-45,2-1-20",
                         "gtid_binlog_pos": "1-1-45,2-1-20", "last_seen_at": "2026-11-21T13:00:01Z",
                         "cells": {
                             "1": {"gtid": "1-1-45", "seq_no": 45, "behind_transactions": 0, "lag_seconds": None},
                             "2": {"gtid": "2-1-20", "seq_no": 20, "behind_transactions": 0, "lag_seconds": None},
                         },
                         "ahead_of_all": True, "has_reached": None}
                    ],
                    "could_be_master": [3],
                }
            ]
        }
    )  # fmt: skip

    cluster_id: int
    domains: list[int]
    most_advanced: str = Field(description="The join (per-domain maximum) of every server's position.")
    rows: list[PositionRow]
    could_be_master: list[int] = Field(
        description="The registered ids (`registered_server_id`) of the healthy servers out of maintenance whose "
        "position is ahead of every other server's, or that are roots ahead of every other server in their own domains "
        "(`ahead_in_own_domains`)."
    )


class PositionSampleRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    registered_server_id: int = Field(
        description="The registered server's id (the control plane's).",
        # Read from the sample's row, whose column keeps the older name.
        validation_alias=AliasChoices("registered_server_id", "server_id"),
    )
    domain_id: int
    gtid: str
    seq_no: int
    sampled_at: datetime
    seq_no_min: int | None = Field(
        None, description="Downsampled (`bucket_s` set): the lowest seq_no in the bucket this sample is the last of."
    )


class PositionHistory(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "cluster_id": 1,
                    "since": "2026-11-21T12:00:00Z",
                    "until": "2026-11-21T13:00:00Z",
                    "samples": [
                        {"registered_server_id": 1, "domain_id": 1, "gtid": "1-1-44", "seq_no": 44,
                         "sampled_at": "2026-11-21T12:59:58Z"}
                    ],
                    "truncated": False,
                }
            ]
        }
    )  # fmt: skip

    cluster_id: int
    since: datetime
    until: datetime
    samples: list[PositionSampleRead] = Field(
        description="Change-only (each row holds until the next of its series), oldest first. When the range holds "
        "more samples than `limit`, one per series (server and domain) and `bucket_s` bucket: the bucket's last "
        "sample, with its lowest seq_no (`seq_no_min`); the newest sample of every series is always among them."
    )
    truncated: bool = Field(description="Some samples of the range are not in the answer (never the newest).")
    bucket_s: int | None = Field(None, description="The downsampling bucket in seconds; None: every sample.")


class LagSampleRead(BaseModel):
    link_id: int
    replica_registered_server_id: int
    master_registered_server_id: int | None
    connection: str | None
    domain_id: int
    transactions: int
    seconds: float
    sampled_at: datetime
    seconds_min: float | None = Field(
        None, description="Downsampled (`bucket_s` set): the lowest seconds in the bucket this sample is the last of."
    )
    seconds_max: float | None = Field(
        None, description="Downsampled (`bucket_s` set): the highest seconds in the bucket this sample is the last of."
    )


class LinkDelayRead(BaseModel):
    """A replica connection's configured delay, as its replica last reported it."""

    link_id: int
    replica_registered_server_id: int
    master_registered_server_id: int | None
    connection: str | None
    delay_s: int = Field(description="MASTER_DELAY: lag up to it is by design (the lag chart draws it as a band).")


class LagHistory(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "cluster_id": 1,
                    "since": "2026-11-21T12:00:00Z",
                    "until": "2026-11-21T13:00:00Z",
                    "at_start": [
                        {"link_id": 1, "replica_registered_server_id": 2, "master_registered_server_id": 1,
                         "connection": "m1", "domain_id": 1, "transactions": 0, "seconds": 0.0,
                         "sampled_at": "2026-11-21T11:42:10Z"}
                    ],
                    "samples": [
                        {"link_id": 1, "replica_registered_server_id": 2, "master_registered_server_id": 1,
                         "connection": "m1", "domain_id": 1, "transactions": 3, "seconds": 0.4,
                         "sampled_at": "2026-11-21T12:59:58Z"}
                    ],
                    "truncated": False,
                }
            ]
        }
    )  # fmt: skip

    cluster_id: int
    since: datetime
    until: datetime
    at_start: list[LagSampleRead] = Field(
        description="Each link and domain's newest sample before `since`: its lag when the range begins (samples "
        "are recorded when lag changes, so a value holds until the next sample)."
    )
    samples: list[LagSampleRead] = Field(
        description="Oldest first. When the range holds more samples than `limit`, one per series and `bucket_s` "
        "bucket: the bucket's last sample, with its lowest and highest seconds (`seconds_min`, `seconds_max`); the "
        "newest sample of every series is always among them."
    )
    truncated: bool = Field(description="Some samples of the range are not in the answer (never the newest).")
    bucket_s: int | None = Field(None, description="The downsampling bucket in seconds; None: every sample.")
    delays: list[LinkDelayRead] = Field(
        default_factory=list,
        description="The cluster's connections configured with a delay now (only those; filtered as the samples are).",
    )
