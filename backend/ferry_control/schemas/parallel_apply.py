"""Parallel apply shapes: what a replica's connections apply with and how fast against their masters
(`ParallelApplyRead`, GET …/servers/{id}/parallel-apply), what a server kind accepts (`ParallelApplyLimitsRead`),
and the settings a change or a catch-up raise records (`ParallelApplySettings`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["keeps_up", "falls_behind", "idle", "unknown"]


class ParallelApplySettings(BaseModel):
    """How one connection applies: the mode, the workers, at most per domain (as the server names them)."""

    model_config = ConfigDict(extra="ignore")

    mode: str | None = Field(
        None,
        description="ferryd: serial, conservative, optimistic; MariaDB: slave_parallel_mode.",
        examples=["optimistic"],
    )
    workers: int | None = Field(None, description="Transactions applied at once (MariaDB: slave_parallel_threads, "
                                "0 = applied by the SQL thread itself).", examples=[8])  # fmt: skip
    domain_workers_max: int | None = Field(None, description="Workers at most per domain (MariaDB: "
                                           "slave_domain_parallel_threads, 0 = no limit).", examples=[8])  # fmt: skip


class ParallelApplyLimitsRead(BaseModel):
    """What the server's kind accepts."""

    modes: list[str]
    parallel_modes: list[str] = Field(description="The modes that apply several transactions of a domain at once.")
    workers_min: int
    workers_max: int
    domain_workers_min: int
    server_wide_workers: bool = Field(
        description="The workers belong to the whole server (MariaDB): changing them pauses every connection's "
        "applying side for the moment of the change."
    )


class DomainRatesRead(BaseModel):
    """One GTID domain: the master's commit rate against the replica's apply rate."""

    domain: int
    master_commit_rate: float | None = Field(description="Transactions per second the master committed.")
    apply_rate: float | None = Field(description="Transactions per second the replica applied.")
    behind: int | None = Field(description="Transactions the replica was behind at the last reading.")
    verdict: Verdict
    falls_behind_by: float | None = Field(description="Transactions per second the master outpaces the replica by.")
    words: str = Field(examples=["falls behind by 310 txn/s (5,400 transactions behind)"])


class ConnectionApplyRead(BaseModel):
    """One replication connection of the server: its parallel apply and its rates per domain."""

    name: str
    master_address: str
    master_registered_server_id: int | None = Field(
        description="The registered server it replicates from (None: not one)."
    )
    running: bool
    sql_state: str
    settings: ParallelApplySettings
    domains: list[DomainRatesRead] = Field(description="Empty when the master is not a registered, reachable server.")
    verdict: Verdict
    words: str = Field(examples=["keeps up"])


class ParallelApplyRead(BaseModel):
    """A server's parallel apply per connection, measured over `measured_over_s`."""

    registered_server_id: int
    label: str
    kind: str
    limits: ParallelApplyLimitsRead | None = Field(description="None: the kind's parallel apply cannot be changed.")
    measured_over_s: float
    connections: list[ConnectionApplyRead]
