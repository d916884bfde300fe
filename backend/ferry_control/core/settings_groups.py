"""The groups of the control plane's settings, one model per concern (`Settings` in config.py holds one of each).

A field's *flat name* is its name unless its group's `flat_names` says otherwise (`collection.enabled` is
`collector_enabled`): the flat name, upper-cased after `FERRY_`, is its environment variable, and the keyword that
sets it in `Settings(...)`. The groups read nothing themselves: `Settings` reads the environment for them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

REPO_ROOT = Path(__file__).resolve().parents[3]
#: Where the embedded SQLite database lives when DATABASE_URL is unset (beside `make up`'s other state).
DEFAULT_SQLITE_PATH = REPO_ROOT / ".run" / "control.sqlite3"


def normalize_database_url(url: str) -> str:
    """Async driver URLs: `postgresql://` and `postgres://` become psycopg 3, `sqlite://` becomes aiosqlite."""
    for prefix in ("postgresql://", "postgres://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if url.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + url[len("sqlite://") :]
    return url


class SettingsGroup(BaseModel):
    """One concern's settings. `flat_names` maps the fields whose flat name is not their own name."""

    model_config = ConfigDict(extra="forbid")

    flat_names: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def flat_name(cls, field: str) -> str:
        return cls.flat_names.get(field, field)


class ProcessSettings(SettingsGroup):
    """What this process is: its environment, its role, its priority, the documentation it serves."""

    environment: Literal["development", "test", "production"] = Field(
        "production",
        description="Placeholder secrets are refused unless this is `development`; a generated secret key file "
        "(dev_secret_key_file) is refused in `production`.",
    )
    role: Literal["all", "web", "worker"] = Field(
        "all",
        description="What this process does: `all` (requests and the background work), `web` (requests and event "
        "streams only; operations run in a worker) or `worker` (`python -m ferry_control worker`: collection, "
        "operations, failover monitoring, drills — no requests).",
    )
    web_nice: int = Field(
        10, ge=0, le=19,
        description="How many steps the web process (role `web`) lowers its CPU priority below the worker's, so that "
        "on a busy machine operations, collection and failover monitoring go first (0: the same priority). At 1,000 "
        "open dashboards on two cores, 10 kept the switchover window within about 1 ms of its idle ~5 ms where 5 "
        "left it 10–53 % longer; reads stayed at p99 85–125 ms (docs/benchmarks.md).",
    )  # fmt: skip
    api_docs: bool = Field(
        True,
        description="Serve the interactive API documentation (/docs, /redoc) and /openapi.json without a token: "
        "they describe the API's shape and hold no data. False: not served.",
    )


class DatabaseSettings(SettingsGroup):
    """The control plane's own database and its connection pools."""

    flat_names: ClassVar[Mapping[str, str]] = {
        "url": "database_url",
        "echo": "database_echo",
        "pool_size": "database_pool_size",
        "pool_overflow": "database_pool_overflow",
        "background_pool_size": "database_background_pool_size",
    }

    url: str = Field(
        f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}",
        description="postgresql+psycopg://… for PostgreSQL; an embedded SQLite file when unset (environment: "
        "DATABASE_URL or FERRY_DATABASE_URL).",
    )
    echo: bool = False
    pool_size: int = Field(
        10, ge=1, le=1000,
        description="PostgreSQL connections kept for requests (API reads and changes, event streams).",
    )  # fmt: skip
    pool_overflow: int = Field(
        10, ge=0, le=1000, description="Further request connections opened under load and closed after."
    )
    background_pool_size: int = Field(
        5, ge=1, le=1000,
        description="PostgreSQL connections of their own (plus database_pool_overflow) for the collector, operations, "
        "the failover monitor and drill scheduling, which requests therefore never hold up. SQLite: one pool.",
    )  # fmt: skip

    @field_validator("url")
    @classmethod
    def _async_driver(cls, url: str) -> str:
        return normalize_database_url(url)

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")


class SecuritySettings(SettingsGroup):
    """Secrets, tokens, TLS to the nodes, who may authenticate how often, trusted addresses, request size."""

    token_pepper: SecretStr = Field(
        SecretStr("development-pepper"),
        description="Server-side secret mixed into API token hashes (HMAC-SHA256), so a stolen table is useless.",
    )
    token_last_used_resolution_s: int = Field(60, ge=0, description="How stale `last_used_at` may get (saves writes).")
    secret_keys: SecretStr | None = Field(
        None,
        description="Fernet keys (comma-separated, url-safe base64 of 32 bytes) for the secrets stored in the "
        "database (cluster node tokens, database credentials). The first encrypts; every one decrypts, so a new "
        "key goes first and an old one stays listed until `ferry_control.cli rotate-secrets` has re-encrypted "
        "everything (docs/security.md). Required in production.",
    )
    dev_secret_key_file: Path | None = Field(
        None,
        description="Development and tests only, and only when FERRY_SECRET_KEYS is unset: a key file generated "
        "on first use and read afterwards. Refused in production.",
    )
    node_token: SecretStr | None = Field(None, description="The ferryd nodes' admin token (mutating calls).")
    node_token_file: Path | None = Field(None, description="A file holding the nodes' admin token.")
    node_tls_ca_file: Path | None = Field(
        None,
        description="A CA certificate file (PEM): when set, the ferry driver speaks https to the nodes' admin API "
        "and verifies their certificates against it. Unset: plain http (the cluster API says plaintext_transport).",
    )
    metrics_token: SecretStr | None = Field(
        None,
        description="A bearer token that may read /metrics (for Prometheus), besides any valid API token.",
    )
    auth_failures_per_min: int = Field(
        30,
        ge=1,
        description="Failed authentications one client address may make per minute; beyond, its requests "
        "are refused (429 `too_many_failures`) before any work, and not audited one by one.",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Reverse proxies (IP addresses, CIDR networks) whose X-Forwarded-For names the client a failed "
        "authentication is counted for (the nearest address it names that is not a trusted proxy); anyone else's "
        "X-Forwarded-For is ignored. Empty: every request counts for its TCP peer.",
    )
    server_trusted_hosts: list[str] = Field(
        default_factory=list,
        description="Server addresses an operator may register, discover or move a server to and have it polled at "
        "once (with its cluster's credentials): host names (exact) and IP networks in CIDR notation an IP-literal "
        "host falls in. Any other address an operator gives is pending until an admin approves it; an admin's "
        "token approves what it registers.",
    )
    request_body_bytes_max: int = Field(
        1024 * 1024, ge=1024, description="The largest request body read (413 `body_too_large` beyond, unparsed)."
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if not _is_network(entry):
                raise ValueError(f"trusted_proxies: {entry!r} is neither an IP address nor a CIDR network")
        return entries

    @field_validator("server_trusted_hosts")
    @classmethod
    def _trusted_hosts(cls, entries: list[str]) -> list[str]:
        return _host_names_or_networks("server_trusted_hosts", entries)


class CollectionSettings(SettingsGroup):
    """The collector: polling the servers, its lease, position samples and their retention, discovery."""

    flat_names: ClassVar[Mapping[str, str]] = {
        "enabled": "collector_enabled",
        "share_clusters": "collector_share_clusters",
        "lease_s": "collector_lease_s",
    }

    enabled: bool = Field(True, description="Run the collector in the app's lifespan.")
    share_clusters: bool = Field(
        True,
        description="PostgreSQL: every instance's collector polls (and watches for failover) its share of the "
        "clusters, each cluster by exactly one live instance (an advisory lock per cluster, freed the moment its "
        "instance dies); false: the holder of the collector lease polls them all. SQLite: one collector anyway.",
    )
    lease_s: float = Field(
        5.0,
        gt=0,
        description="With several API instances, one at a time runs the collector: it holds a lease in the "
        "database for this long and renews it every poll interval; a standby takes over once the lease lapsed. "
        "Must be longer than poll_interval_s (better: than a whole cycle with its slowest polls).",
    )
    poll_interval_s: float = Field(1.0, gt=0, description="Time between the starts of two collector cycles.")
    poll_concurrency_max: int = Field(32, ge=1, description="Servers polled at once.")
    poll_timeout_s: float = Field(2.0, gt=0, description="Whole time one server's poll may take.")
    unreachable_after_failures: int = Field(
        3, ge=1, description="Failed polls in a row that mark a server unreachable."
    )
    position_sample_full_resolution_s: int = Field(3600, ge=0, description="Samples younger than this are all kept.")
    position_sample_bucket_s: int = Field(60, ge=1, description="Older samples keep one per server, domain, bucket.")
    position_sample_retention_s: int = Field(7 * 86400, ge=1, description="Samples older than this are deleted.")
    retention_interval_s: float = Field(300.0, gt=0, description="How often the collector runs the retention job.")
    discovery_servers_max: int = Field(100, ge=1, description="Most servers one discovery may visit.")
    discovery_concurrency_max: int = Field(
        8, ge=1, le=256, description="Most servers one discovery asks for their status at once."
    )

    @model_validator(mode="after")
    def _lease_outlives_a_poll_interval(self) -> CollectionSettings:
        if self.lease_s <= self.poll_interval_s:
            raise ValueError(
                f"FERRY_COLLECTOR_LEASE_S ({self.lease_s}) must be longer than FERRY_POLL_INTERVAL_S "
                f"({self.poll_interval_s}): the collector's leader renews its lease once per poll interval"
            )
        return self


class NodeClientSettings(SettingsGroup):
    """The bounds of the calls to the managed servers: ferryd's admin API and binary protocol (MariaDB's logins take
    the connect and read timeouts)."""

    flat_names: ClassVar[Mapping[str, str]] = {
        "connect_timeout_s": "node_connect_timeout_s",
        "read_timeout_s": "node_read_timeout_s",
        "answer_bytes_max": "node_answer_bytes_max",
        "read_retries_max": "node_read_retries_max",
        "retry_backoff_s": "node_retry_backoff_s",
        "protocol_timeout_s": "node_protocol_timeout_s",
    }

    connect_timeout_s: float = Field(1.0, gt=0)
    read_timeout_s: float = Field(5.0, gt=0, description="Per request to a node (waits add their own timeout).")
    answer_bytes_max: int = Field(
        4 * 1024 * 1024,
        ge=1024,
        description="The largest answer read from a node's admin API; a longer one is refused as the node's error "
        "(a hostile or broken node cannot fill the control plane's memory).",
    )
    read_retries_max: int = Field(2, ge=0, description="Retries of a failed read; mutating calls never retry.")
    retry_backoff_s: float = Field(0.05, ge=0)
    protocol_timeout_s: float = Field(5.0, gt=0, description="Per request on a node's binary protocol.")


class StreamSettings(SettingsGroup):
    """Event streams (SSE) to dashboards and the live positions sent on them."""

    events_queue_max: int = Field(1000, ge=1, description="Events buffered per SSE subscriber before dropping.")
    events_ping_s: float = Field(15.0, gt=0, description="SSE keep-alive comment interval.")
    events_streams_per_token_max: int = Field(
        50, ge=1, description="Event streams one token may hold open on one API instance (429 beyond)."
    )
    events_streams_max: int = Field(5000, ge=1, description="Event streams one API instance serves (429 beyond).")
    live_positions_interval_s: float = Field(
        0.25,
        ge=0,
        description="How often the web process reads the positions of the servers its open dashboards show and "
        "sends their changes to the dashboards' streams (0: off; positions then move at the collector's pace).",
    )
    live_positions_servers_max: int = Field(
        50,
        ge=0,
        description="Most servers read that way by one web process (the others move at the collector's pace).",
    )


class ReadSettings(SettingsGroup):
    """Limits on the expensive reads (interleavings: binlog events fanned out over a cluster)."""

    interleavings_events_max: int = Field(
        1000, ge=1, le=1000, description="Most events one interleavings request may ask of each server (then 422)."
    )
    heavy_reads_per_token_max: int = Field(
        2, ge=1, description="Interleavings reads one token may have in progress at once (429 beyond)."
    )
    heavy_reads_max: int = Field(
        8, ge=1, description="Interleavings reads one API instance runs at once, all tokens together (429 beyond)."
    )
    heavy_read_timeout_s: float = Field(
        10.0, gt=0, description="The most one server's part of an interleavings read may take (then its error)."
    )
    expensive_reads_per_min: int = Field(
        60,
        ge=1,
        description="Per API token: interleavings (binlog event reads fanned out over a cluster) allowed per "
        "minute, as a token bucket of this size refilled evenly; beyond, 429 with Retry-After.",
    )


class OperationSettings(SettingsGroup):
    """The orchestrator: operations' lock and lease, switchovers' budgets, waits, verify, rejoin."""

    flat_names: ClassVar[Mapping[str, str]] = {
        "pickup_interval_s": "operation_pickup_interval_s",
        "lease_s": "operation_lease_s",
        "fence_trust_s": "operation_fence_trust_s",
        "shutdown_grace_s": "operation_shutdown_grace_s",
        "timeout_s": "operation_timeout_s",
    }

    replication_connection_name: str = Field(
        "main", pattern=r"^[A-Za-z0-9_]{1,64}$", description="Name of the connections the orchestrator creates."
    )
    verify_after_rejoin: bool = Field(
        True,
        description="After a rejoin or a rebuild succeeded, start a consistency check of that server against its "
        "source (an operation of its own; its id is in the rejoin's or rebuild's result).",
    )
    verify_chunk_rows: int = Field(
        10_000, ge=10, le=1_000_000, description="Rows per chunk of the check started after a rejoin or a rebuild."
    )
    pickup_interval_s: float = Field(
        1.0, gt=0, le=60,
        description="How often a worker looks for operations web processes accepted whose announcement it missed.",
    )  # fmt: skip
    lease_s: float = Field(
        60.0,
        gt=0,
        description="A running operation renews its cluster lock this often x3; a lock not renewed for "
        "this long belongs to a dead API instance and may be taken over.",
    )
    fence_trust_s: float = Field(
        30.0,
        ge=0,
        description="How long after a renewal of its lease (or a read of its lock) an operation's steps trust that it "
        "still holds the cluster, without reading the lock again; at most half of operation_lease_s is used. A lock "
        "changes hands only once its lease lapsed, so this is safe while the instances' clocks agree within "
        "operation_lease_s minus this. 0: every step reads the lock first (a database round trip, 2–3 ms each, "
        "three of them inside a switchover's window).",
    )
    shutdown_grace_s: float = Field(
        30.0, ge=0, description="On shutdown, how long running operations may still finish before being cancelled."
    )
    timeout_s: float = Field(
        1800.0,
        gt=0,
        description="Bound on one operation's whole run: past it the operation is stopped and what it began undone.",
    )
    switchover_max_window_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="A switchover's (and drill's) write-unavailability budget unless the operation or its cluster "
        "gives one: before the master goes read-only, the candidate catches up while the master keeps taking writes "
        "until the predicted window (transactions behind / its apply rate) fits this; 10 s is the MASTER_GTID_WAIT "
        "bound of a careful hand sequence (docs/operator-guide.md).",
    )
    switchover_prepare_timeout_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="How long a switchover's catch-up before the window may wait for the predicted window to fit its "
        "budget; then it fails having changed nothing, with the rates and the predicted window.",
    )
    switchover_catch_up_timeout_s: float = Field(
        10.0, gt=0, description="How long the candidate may take to reach the read-only master's position; then undo."
    )
    in_flight_quiet_ms: int = Field(
        50,
        ge=0,
        description="For servers whose driver cannot count commits in flight: after read-only on, the master's "
        "position must stay still this long (in-flight commits done).",
    )
    in_flight_wait_max_s: float = Field(
        5.0, gt=0, description="Bound on the wait for the commits in flight after read-only on (then undo)."
    )
    verify_timeout_s: float = Field(
        30.0, gt=0, description="How long every server may take to replicate from the new master and converge."
    )
    rejoin_retry_s: float = Field(
        300.0,
        gt=0,
        description="With a cluster's auto_rejoin: a fenced server's rejoin that was refused (transactions only it "
        "has) or could not start is tried again no sooner than this.",
    )


class FailoverSettings(SettingsGroup):
    """Detecting a lost master and recovering from it."""

    flat_names: ClassVar[Mapping[str, str]] = {
        "detection_polls": "failover_detection_polls",
        "relay_drain_timeout_s": "failover_relay_drain_timeout_s",
        "cooldown_s": "failover_cooldown_s",
        "not_confirmed_log_s": "failover_not_confirmed_log_s",
    }

    detection_polls: int = Field(
        3, ge=1, description="Failed collector polls of the master in a row before failover is considered."
    )
    relay_drain_timeout_s: float = Field(
        30.0, gt=0, description="How long replicas may take to apply what they received before a candidate is chosen."
    )
    cooldown_s: float = Field(
        600.0, ge=0, description="After a failover, no automatic failover for this long, even once acknowledged."
    )
    not_confirmed_log_s: float = Field(
        60.0, gt=0, description="How often an unconfirmed master loss (a control-plane-only blip) is logged."
    )
    master_write_probe: bool = Field(
        False,
        description="Opt-in: at every poll the collector commits one probe row (the drivers' canary table, the "
        "server's default domain) on each writable master; one that does not commit within "
        "master_write_probe_timeout_s reports a failure, which the failover monitor counts like a missed poll. "
        "Each probe is a transaction of its own on the master, replicated like any other.",
    )
    master_write_probe_timeout_s: float = Field(
        2.0, gt=0, description="How long a master's probe write may take before the master counts as failed."
    )


class WebhookSettings(SettingsGroup):
    """Webhook calls: their bounds, the addresses allowed, and the URLs called on each event."""

    flat_names: ClassVar[Mapping[str, str]] = {
        "timeout_s": "webhook_timeout_s",
        "allowed_hosts": "webhook_allowed_hosts",
        "response_bytes_max": "webhook_response_bytes_max",
        "pre_operation": "pre_operation_webhooks",
        "post_operation": "post_operation_webhooks",
        "failure_detection": "failure_detection_webhooks",
        "read_only_enforcement": "read_only_enforcement_webhooks",
        "recovery_failed": "recovery_failed_webhooks",
        "drill_failure": "drill_failure_webhooks",
    }

    timeout_s: float = Field(5.0, gt=0, description="Per webhook call.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Webhook targets allowed although they are loopback, link-local, private, unspecified or the "
        "metadata address (refused by default): host names (exact) and IP networks in CIDR notation.",
    )
    response_bytes_max: int = Field(
        4096, ge=0, description="Most bytes of a webhook's answer read (then the connection is closed); none stored."
    )
    pre_operation: list[str] = Field(
        default_factory=list, description="URLs POSTed before an operation changes anything; a failure aborts it."
    )
    post_operation: list[str] = Field(
        default_factory=list, description="URLs POSTed when an operation ended (failures are recorded only)."
    )
    failure_detection: list[str] = Field(
        default_factory=list,
        description="URLs POSTed when the failover monitor confirms a lost master (stage `detected`), beside the "
        "recovery, never delaying it.",
    )
    read_only_enforcement: list[str] = Field(
        default_factory=list,
        description="URLs POSTed when the replica guard finds a replica writable: stage `read_only_enforced` (made "
        "read-only again), `read_only_enforcement_failed`, or `writable_replica` (only flagged: enforcement off for "
        "its cluster, or the server in maintenance; sent once until it is read-only again).",
    )
    recovery_failed: list[str] = Field(
        default_factory=list,
        description="URLs POSTed when an automatic failover could not start or ended without a new master (stage "
        "`not_recovered`).",
    )
    drill_failure: list[str] = Field(
        default_factory=list, description="URLs POSTed when a drill fails (besides the schedule's own)."
    )

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, entries: list[str]) -> list[str]:
        return _host_names_or_networks("webhook_allowed_hosts", entries)


class DrillSettings(SettingsGroup):
    """Drills: their scheduler, live canary writer and checks."""

    flat_names: ClassVar[Mapping[str, str]] = {
        "scheduler_enabled": "drill_scheduler_enabled",
        "scheduler_interval_s": "drill_scheduler_interval_s",
        "canary_table": "drill_canary_table",
        "events_scan_max": "drill_events_scan_max",
        "canary_interval_ms": "drill_canary_interval_ms",
        "canaries_per_domain_max": "drill_canaries_per_domain_max",
        "canary_lead_s": "drill_canary_lead_s",
        "checksum_wait_s": "drill_checksum_wait_s",
        "canary_verify_timeout_s": "drill_canary_verify_timeout_s",
    }

    scheduler_enabled: bool = Field(True, description="Run due drill schedules from this instance.")
    scheduler_interval_s: float = Field(5.0, gt=0, description="How often due drill schedules are looked for.")
    canary_table: str = Field("ferry_drill_canary", pattern=r"^[A-Za-z0-9_]{1,64}$")
    events_scan_max: int = Field(
        5000, ge=100, description="Most recent binlog events per server scanned for duplicated GTIDs."
    )
    canary_interval_ms: int = Field(
        40, ge=5, le=10_000, description="The drill's live canary writer: one write per domain this often."
    )
    canaries_per_domain_max: int = Field(
        2000, ge=1, le=100_000, description="Bound on the live canary writes of one drill, per domain."
    )
    canary_lead_s: float = Field(
        0.5, ge=0, le=60, description="How long the live canary writer runs before the switch (and after each)."
    )
    checksum_wait_s: float = Field(
        5.0,
        gt=0,
        description="Drill checksums: how long the servers may take, all together, to reach the most advanced "
        "one's position per attempt (positions that differ are waited on at most this long, then read again).",
    )
    canary_verify_timeout_s: float = Field(
        30.0, gt=0, description="How long each server may take to reach the acknowledged canaries' GTIDs."
    )


class ProxySettings(SettingsGroup):
    """The HAProxy instances Ferry moves writers on, and the reader role check."""

    haproxy_admin_sockets: list[str] = Field(
        default_factory=list,
        description="HAProxy admin sockets (`level admin`) Ferry moves clusters' writers on during switchovers and "
        "failovers: a unix socket path or host:port each. Set by the operator only, never through the API.",
    )
    haproxy_timeout_s: float = Field(0.5, gt=0, le=10, description="Bound on one proxy's answer to a move.")
    reader_max_lag_s: float = Field(
        5.0, ge=0, description="A replica lagging more than this in any domain fails the reader role check."
    )


def _is_network(entry: str) -> bool:
    try:
        ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
    return True


def _host_names_or_networks(flat_name: str, entries: list[str]) -> list[str]:
    for entry in entries:
        if not entry or any(c.isspace() for c in entry) or "/" in entry and not _is_network(entry):
            raise ValueError(f"{flat_name}: {entry!r} is neither a host name nor a CIDR network")
    return [e.lower() for e in entries]
