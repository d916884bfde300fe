"""The topology graph: servers as nodes, replication links as edges."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ferry_control.core.enums import HealthState, LinkSource, ServerKind
from ferry_control.schemas.lag import LagVerdict
from ferry_control.schemas.server import REPLICAS_MAY_BE_AHEAD, MaintenanceRead


class DomainLagRead(LagVerdict):
    """A connection's lag in one domain as the collector stored it, judged against the connection's configured delay
    (services/lag.py): the same figure and words on every surface."""

    seconds: float = Field(
        description="Seconds behind, on the control plane's clock: how long ago the collector first saw the master "
        "past the replica's position in this domain (0 when it never was: caught up). Resolution: the poll "
        "interval. When the master is not a polled server, the replica's own figure. A configured delay included."
    )
    reported_seconds: float | None = Field(
        None,
        description="The server's own figure: ferryd's per-domain lag (now minus the last applied origin commit "
        "time); MariaDB's Seconds_Behind_Master of the connection. None when the server gives none.",
    )


class ErrantDomainRead(BaseModel):
    """A replicating server's own transactions in one domain that none of its masters has (errant)."""

    domain: int
    server_id: int = Field(description="The server's own server_id: the middle part of these GTIDs.")
    first_gtid: str | None = Field(
        description="Its first own transaction after the last one it applied from a master in the domain; None when "
        "its own transactions interleave with replicated ones (list them with the binlog tool)."
    )
    last_gtid: str = Field(description="Its newest own transaction in the domain.")
    transactions: int | None = Field(
        description="seq_nos from first_gtid to last_gtid: its own writes there, exactly unless a failed transaction "
        "left a hole. None with first_gtid None."
    )
    since: datetime = Field(description="When the control plane first saw this domain errant on the server.")


class TopologyNode(BaseModel):
    registered_server_id: int = Field(
        description="The control plane's id of the registered server (API paths); its own is `reported_server_id`."
    )
    name: str
    label: str = Field(
        description="How every message, operation step and CLI line names the server: its name and the server_id it "
        "last reported, e.g. `db-3 (server_id 3)` (`server_id not read yet` before its first poll)."
    )
    kind: ServerKind = Field(ServerKind.ferry, description="Which driver speaks to the server.")
    version: str | None = Field(None, description="The server software's version as the last poll read it.")
    binlog_format: str | None = Field(
        None, description="MariaDB: @@binlog_format as the last poll read it; None when the server does not say."
    )
    replicas_may_be_ahead: bool | None = Field(None, description=REPLICAS_MAY_BE_AHEAD)
    warnings: list[str] = Field(
        default_factory=list,
        description="What the server's last poll reported that an operator should look at, in words: semi-sync "
        "fallen back to asynchronous on a writable server; ferryd: binlog expiry holding a file back for a replica "
        "(naming both), or failing. Each is also one of the cluster's problems in the overview.",
    )
    host: str
    protocol_port: int | None
    admin_port: int | None
    reported_server_id: int | None
    health: HealthState
    maintenance: bool
    maintenance_detail: MaintenanceRead | None = Field(
        None, description="Who set the maintenance it is in, why, since and until when; None when not in maintenance."
    )
    read_only: bool | None
    role: Literal["master", "replica", "intermediate", "standalone"] = Field(
        description="master: has replicas, replicates from none; intermediate: both; replica: only replicates."
    )
    gtid_current_pos: str | None
    errant: list[ErrantDomainRead] = Field(
        default_factory=list,
        description="Per domain, the transactions it wrote itself that none of its masters has, as the replica guard "
        "last found them; each is also one of the cluster's problems.",
    )
    writable_domains: list[int] = Field(
        default_factory=list,
        description="The domains an admin made this replicating server writable for (it originates them): the "
        "guard leaves it writable and its own transactions there are not errant.",
    )


class LinkSettingsRead(BaseModel):
    """A connection's own settings as the replica reports them."""

    delay_s: int = Field(0, description="Configured delay (MASTER_DELAY): a transaction is applied this many seconds "
                         "after its commit on the master; lag up to it is by design.")  # fmt: skip
    ignore_duplicates: bool = False
    heartbeat_ms: int | None = None
    parallel_mode: str | None = Field(None, description="Parallel apply: serial, conservative, optimistic, …")
    workers: int | None = Field(None, description="Transactions applied at once.")
    domain_workers_max: int | None = Field(None, description="Workers at most per domain.")
    semi_sync_replica: bool | None = Field(
        None, description="Acknowledges receipt to a semi-sync master; None: no per-connection setting (ferryd)."
    )
    filters: dict[str, str] = Field(default_factory=dict, description="Replication filters by name, values as text.")


class LinkStall(BaseModel):
    """The SQL side makes no progress while work waits (a lock wait, parallel workers stuck, a paused applier)."""

    transactions_waiting: int = Field(description="Received (relay log / read-ahead) and not applied, in `domains`.")
    domains: list[int] = Field(description="The domains where nothing was applied while transactions waited.")
    no_progress_s: float = Field(description="Seconds since the applied position last moved there.")
    reason: str | None = Field(
        description="The server's own words for what its applier is doing (MariaDB: Slave_SQL_Running_State), "
        "or the SQL state it reports; None when it gives none."
    )


class TopologyEdge(BaseModel):
    link_id: int
    source: LinkSource = Field(description="Who reported the edge: the replica (full status) or only the master.")
    connection: str | None = Field(description="The connection's name on the replica.")
    master_registered_server_id: int | None = Field(
        description="The master's registered id; None when the master address matches no registered server."
    )
    master_address: str | None
    replica_registered_server_id: int = Field(description="The replica's registered id.")
    running: bool
    io_state: str | None
    sql_state: str | None
    waiting_for_relay_space: bool = Field(
        False,
        description="The receiving side waits for the applier to free relay log space (the connection's relay log "
        "reached its space limit: ferryd --relay-log-space-bytes-max, MariaDB relay_log_space_limit); still "
        "connected, receiving nothing until then.",
    )
    lag: dict[int, DomainLagRead] = Field(description="Per domain.")
    worst_lag: DomainLagRead | None = Field(
        None, description="The worst of `lag` over the domains (services/lag.py); None without lag reported."
    )
    last_error_code: str | None
    last_error_message: str | None
    last_error_words: str | None = Field(
        None,
        description="The error in words with the action that fits (e.g. a strict-mode refusal: the replica took "
        "writes of its own), the server's own message quoted after; None without an error.",
    )
    updated_at: datetime
    settings: LinkSettingsRead | None = Field(None, description="None when the replica does not report them.")
    sql_state_detail: str | None = Field(
        None, description="The server's own words for what its applier is doing (MariaDB: Slave_SQL_Running_State)."
    )
    stall: LinkStall | None = Field(
        None,
        description="Set when the SQL side has applied nothing for longer than the configured delay plus a few "
        "polls while transactions wait; each is also one of the cluster's problems in the overview.",
    )


class ClusterAlert(BaseModel):
    """Something about the cluster an operator must look at (the dashboard shows it as a banner)."""

    kind: Literal["master_read_only", "operation_interrupted", "writable_replica", "errant_transactions"] = Field(
        description="master_read_only: the master refuses writes and no operation is running (a switchover cut "
        "short, or a manual read-only); operation_interrupted: the cluster's last operation was cut short by the "
        "death of its API instance and reconciled afterwards (its error says what was found and done); "
        "writable_replica: a server that replicates answers writable while no operation runs (the replica guard "
        "makes it read-only unless enforcement is off or it is in maintenance); errant_transactions: a "
        "replicating server holds writes of its own that none of its masters has, per domain."
    )
    message: str
    registered_server_id: int | None = Field(None, description="The server concerned (its registered id), if one.")
    operation_id: int | None = Field(None, description="The operation concerned, if one.")


class TopologyGraph(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "cluster_id": 1,
                    "nodes": [
                        {"registered_server_id": 1, "name": "node1",
                         "label": "node1 (server_id 1)", "kind": "ferry", "version": "ferryd (admin API v1)",
                         "host": "127.0.0.1", "protocol_port": 7301,
                         "admin_port": 7401, "reported_server_id": 1, "health": "healthy", "maintenance": False,
                         "read_only": False, "role": "master", "gtid_current_pos": "1-1-45"},
                        {"registered_server_id": 2, "name": "node2",
                         "label": "node2 (server_id 2)", "kind": "ferry", "version": "ferryd (admin API v1)",
                         "host": "127.0.0.1", "protocol_port": 7302,
                         "admin_port": 7402, "reported_server_id": 2, "health": "healthy", "maintenance": False,
                         "read_only": True, "role": "replica", "gtid_current_pos": "1-1-44"},
                    ],
                    "edges": [
                        {"link_id": 1, "source": "replica", "connection": "m1", "master_registered_server_id": 1,
                         "master_address": "127.0.0.1:7301", "replica_registered_server_id": 2, "running": True,
                         "io_state": "connected", "sql_state": "applying",
                         "lag": {"1": {"transactions": 1, "seconds": 0.2}}, "last_error_code": None,
                         "last_error_message": None, "updated_at": "2026-11-21T13:00:01Z"}
                    ],
                    "alerts": [],
                }
            ]
        }
    )  # fmt: skip

    cluster_id: int
    nodes: list[TopologyNode]
    edges: list[TopologyEdge]
    alerts: list[ClusterAlert] = Field(default_factory=list, description="What an operator must look at now.")
