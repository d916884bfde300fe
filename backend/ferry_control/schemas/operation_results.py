"""What each operation type records as its result (`OperationRead.result`, the `operations.result` column): one
model per type, the plans a reconcile after a crash reads back (`MasterSwitch`, `HubSwitchPlan`, `HubFailoverPlan`),
and the parts every type may carry (the guard's `undo`, failed post-operation webhooks, a reconcile's report).

An executor fills its type's model as it goes (`ctx.result`); the row keeps the fields that were set (`stored`), so
the column's JSON is what it was before these models existed, and rows written then read the same (unknown keys
are ignored). Results are read-mostly records: every field is optional, set by the step that finds it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, model_validator

from ferry_control.schemas.consumer import PlanConsumer
from ferry_control.schemas.parallel_apply import ParallelApplySettings
from ferry_control.schemas.registered_ids import read_old_names
from ferry_control.schemas.server import MasterRoleRead
from ferry_control.schemas.topology import LinkSettingsRead


class Record(BaseModel):
    """A part of a result: unknown keys of older rows are ignored; ids of registered servers stored under their old
    names (`server_id`, `…_server_id`) are read under their new ones (schemas/registered_ids.py)."""

    model_config = ConfigDict(extra="ignore", serialize_by_alias=True, validate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, value: Any) -> Any:
        return read_old_names(cls.model_fields, value)


class NamedCheck(Protocol):
    """A check as a driver or a precheck reports it (drivers.base.Check has this shape)."""

    @property
    def name(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def detail(self) -> str: ...


class CheckResult(Record):
    """One named preflight check and what it found."""

    name: str
    passed: bool
    detail: str

    @classmethod
    def of(cls, check: NamedCheck) -> CheckResult:
        return cls(name=check.name, passed=check.passed, detail=check.detail)


class UndoReport(Record):
    """What the guard did when the operation ended without success (`ctx.guarded()`)."""

    reason: str = Field(description="Why the operation stopped.")
    done: str = Field(description="What the undo or roll forward did, or could not do.")
    complete: bool = Field(description="Whether everything was put back (or completed).")


FailureKind = Literal[
    "refused",
    "step_failed",
    "server_error",
    "timed_out",
    "lock_lost",
    "shutdown",
    "interrupted",
    "internal",
    "cancelled",
]


class Failure(Record):
    """Why an operation did not succeed, typed (its `error` says it in words, for people)."""

    kind: FailureKind = Field(
        description="refused: its checks or conditions refused it before it changed anything; step_failed: a step's "
        "own check failed; server_error: a server answered with an error; timed_out: it ran past its time bound; "
        "lock_lost: it lost the cluster's operation lock; shutdown: the API instance running it shut down; "
        "interrupted: the API instance running it stopped without finishing it, and a reconcile settled its servers "
        "(compensation says how; null: it could not); internal: an unexpected error; cancelled: an operator "
        "cancelled it while it ran (POST …/cancel)."
    )
    changed: bool | None = Field(
        description="Whether it left servers changed: false when it changed nothing or put everything back; null "
        "when it cannot tell."
    )
    left: list[str] = Field(
        default_factory=list, description="What it left changed or could not put back, in words (empty: nothing)."
    )
    compensation: Literal["undone", "rolled_forward"] | None = Field(
        None, description="What its guard did about what it had changed: put back, or completed (None: nothing)."
    )


class WebhookCall(Record):
    """One webhook call: the target as scheme://host:port, and how it answered."""

    url: str
    ok: bool
    status: int | None = None
    error: str | None = None
    duration_s: float


class ProxyOutcome(Record):
    """Commands sent to one HAProxy admin socket as the writer moved."""

    proxy: str
    commands: list[str]
    ok: bool
    error: str | None = None


class ConnectionState(Record):
    name: str
    master: str | None = Field(None, description="The master's label when registered, else its address.")
    running: bool
    io_state: str
    last_error: str | int | None = None


class ServerState(Record):
    reachable: bool
    error: str | None = None
    read_only: bool | None = None
    connections: list[ConnectionState] | None = None


class ClusterState(Record):
    """Per server (by label): reachable, read-only, each connection's master and state."""

    servers: dict[str, ServerState]
    writable_without_master: list[str] = Field(description="Writable servers replicating from nobody.")


class ReconcileReport(Record):
    """What the reconciler found, did and could not do for an operation a dead instance left (`reconciled`)."""

    at: datetime | None = None
    duration_s: float | None = None
    found: ClusterState | None = None
    done: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    after: ClusterState | None = None


class ConnectionSettingsRecord(Record, LinkSettingsRead):
    """A replica connection's own settings as a plan keeps them (drivers.base.ConnectionSettings, converted both ways
    by the hub switchover): the fields the topology reports them with (`LinkSettingsRead`), read as a plan's parts
    are."""


class ServerConnection(Record):
    """A server and its replication connection's name, in a plan. Rows written before this model kept it as a pair
    `[registered_server_id, connection]`, read the same."""

    registered_server_id: int
    connection: str

    @model_validator(mode="before")
    @classmethod
    def _pair(cls, value: Any) -> Any:
        if isinstance(value, list | tuple) and len(value) == 2:
            return {"registered_server_id": value[0], "connection": value[1]}
        return value


class MasterSwitch(Record):
    """A master switchover's plan, in the database before its first move: what a reconcile after a crash undoes or
    completes (no_return.decide)."""

    old_master_registered_server_id: int
    new_master_registered_server_id: int
    connection: str = Field(description="The candidate's connection to the old master; the old master's afterwards.")
    old_master_was_read_only: bool
    candidate_was_read_only: bool
    others: list[ServerConnection] = Field(description="The other replicas to repoint, each over its connection.")
    candidate_keeps: list[str] = Field(
        default_factory=list,
        description="A multi-source candidate's running connections to its other masters: running after the move.",
    )
    candidate_role: MasterRoleRead | None = Field(
        None,
        description="The candidate's own master-side settings before the move (semi-sync): put back if it is undone.",
    )


class HubIncoming(Record):
    """One of an intermediate master's incoming connections, as its switchover moves it to the candidate."""

    name: str
    master_registered_server_id: int
    master_address: str
    running: bool
    settings: ConnectionSettingsRecord | None = Field(
        None, description="The connection's own settings, less its delay and filters (neither is carried over)."
    )


class HubSwitchPlan(Record):
    """An intermediate master's switchover (`hub_switch`), in the database before its first move: a reconcile
    completes it once the candidate replicates from the hub's masters, else undoes it."""

    hub_registered_server_id: int
    candidate_registered_server_id: int
    candidate_connection: str
    candidate_settings: ConnectionSettingsRecord | None = None
    incoming: list[HubIncoming]
    others: list[ServerConnection]


class StoredIncoming(Record):
    """One of a lost intermediate master's connections to its masters, as the collector last stored it."""

    name: str
    master_registered_server_id: int
    master_address: str


class HubFailoverPlan(Record):
    """A lost intermediate master's failover (`hub_failover`), in the database before its first move: a reconcile
    completes it."""

    hub_registered_server_id: int
    new_hub_registered_server_id: int
    new_hub_connection: str
    incoming: list[StoredIncoming]
    siblings: list[ServerConnection]
    #: The settings the new hub's connections to the lost hub's masters get (its connection to the lost hub's, less
    #: its delay and filters), the live run's and a completion's alike (None: the server's defaults).
    new_hub_settings: ConnectionSettingsRecord | None = None


class MovedConnection(Record):
    """A replication connection a switchover makes or repoints, with the settings it has afterwards: those it takes
    from the connection it replaces, and those of that connection it does not take."""

    server: str = Field(description="The server that has the connection afterwards (by label).")
    connection: str = Field(description="Its name ('' is MariaDB's default connection).")
    master: str = Field(description="The server it replicates from afterwards (by label).")
    settings_from: str = Field(
        description="Where its settings come from, in words (as on s3's 'm1' to s1; its own, kept)."
    )
    carried: list[str] = Field(
        default_factory=list, description="Its settings afterwards, in words (empty: the server's defaults)."
    )
    not_carried: list[str] = Field(
        default_factory=list,
        description="Settings of the connection it takes them from that it does not keep (a delay, filters), in words.",
    )


class SwitchPlanView(Record):
    """A switchover per domain before anything moves (its dry run shows it): every involved server's position per
    domain (by label), who lends each domain up to which GTID and who sends it afterwards, what each server
    replicates from afterwards, and the settings each connection the move makes or repoints carries over."""

    source: str
    candidate: str
    positions: dict[str, dict[str, str]]
    lenders: dict[str, str] = Field(
        description="Per domain ('domain 1'): the source up to its GTID now, then the server that sends the rest (an "
        "intermediate master's: the master of its connection whose binlog has the domain, and that connection)."
    )
    afterwards: dict[str, list[str]] = Field(
        description="Per server (by label): each connection it replicates over afterwards and from whom, in words "
        "('m1' from s1; (default connection) from s5)."
    )
    moved: list[MovedConnection] = Field(
        default_factory=list, description="Each connection the move makes or repoints, with the settings it carries."
    )
    consumers: list[PlanConsumer] = Field(
        default_factory=list,
        description="The change consumers connected now to the servers of the move, with what it does to each stream.",
    )
    consumers_note: str | None = Field(
        None, description="What the servers cannot know of their consumers (which follow the master), in words."
    )


class LostDomain(Record):
    domain: int
    old_master_last_seen: str
    new_master: str | None = None
    transactions_possibly_lost: int


class LostReport(Record):
    """A failover's report of what the old master may have had beyond the new master, per domain."""

    old_master_replicas_may_be_ahead: bool | None = None
    old_master_last_seen_position: str | None = None
    old_master_last_seen_at: datetime | None = None
    old_master_last_seen_age_s: float | None = None
    old_master_position_heard_by_replicas: str | None = None
    new_master_position: str | None = None
    domains: list[LostDomain] = Field(default_factory=list)
    note: str


class DomainOrigin(Record):
    """Per domain a re-homed intermediate master has: where it came from, from which GTID up to which."""

    domain: int
    from_: str = Field(alias="from")
    from_gtid: str | None = None
    up_to: str


class StopReason(Record):
    """What stopped a replica's connection, as the server says it."""

    stopped_by: str
    sql_state: str | None = None
    code: str | int | None = None
    message: str | None = None


class DomainRate(Record):
    """One domain as the catch-up before the window last measured it."""

    domain: int
    behind: int = Field(description="Transactions the candidate lacked.")
    master_commits_per_s: float
    candidate_applies_per_s: float


class CatchUpPhase(Record):
    """The catch-up before the window: how long the move waited for the candidate while the master took writes, the
    budget it waited to fit, and the load it measured (the write load the move ran under)."""

    waited_s: float | None = None
    max_window_s: float
    predicted_catch_up_s: float | None = Field(
        None, description="The window's catch-up predicted when the master went read-only (None: unbounded)."
    )
    behind: int = 0
    rates: list[DomainRate] = Field(default_factory=list)


class SwitchFigures(Record):
    """A drill's switch: the write-unavailability window (None for an intermediate master's: the masters never
    stopped), the candidate's catch-up, the position it caught up to."""

    unavailable_s: float | None = None
    catch_up_s: float | None = None
    position: str | None = None
    catch_up_phase: CatchUpPhase | None = None
    window_steps: dict[str, float] | None = None


class ParallelApplyRaise(Record):
    """A connection's parallel apply raised for a catch-up (`catch_up_parallel_workers`), recorded before the raise:
    what a reconcile after a crash puts back while `restored` is false."""

    registered_server_id: int
    connection: str
    previous: ParallelApplySettings
    raised: ParallelApplySettings
    restored: bool = False


class OperationResult(Record):
    """What every operation may record besides its own figures."""

    undo: UndoReport | None = None
    failure: Failure | None = Field(None, description="Set when it did not succeed.")
    post_hook_failures: list[WebhookCall] | None = None
    reconciled: ReconcileReport | None = None
    parallel_apply_raised: list[ParallelApplyRaise] | None = Field(
        None, description="Parallel apply raised for a catch-up, and whether it was put back."
    )

    def stored(self) -> dict[str, Any]:
        """As the operation's row keeps it: the fields that were set."""
        return self.model_dump(mode="json", exclude_unset=True)


class MovesWriter(OperationResult):
    """An operation that moves a source's role (switchover, failover, drill)."""

    checks: list[CheckResult] | None = None
    old_master_registered_server_id: int | None = None
    new_master_registered_server_id: int | None = None
    proxies: list[ProxyOutcome] | None = Field(None, description="What each HAProxy was told as the writer moved.")
    replication_gaps_s: dict[str, float | None] | None = Field(
        None, description="Per moved server (by label): how long it had no running connection to a master."
    )

    def proxy_outcomes(self) -> list[ProxyOutcome]:
        if self.proxies is None:
            self.proxies = []
        return self.proxies


class SwitchesMaster(MovesWriter):
    """The moves of a switchover (also a drill's): the plan a reconcile reads, and the figures."""

    switch: MasterSwitch | None = None
    hub_switch: HubSwitchPlan | None = None
    position: str | None = Field(None, description="P: where the old master (or hub) stopped.")
    catch_up_s: float | None = None
    unavailable_s: float | None = Field(None, description="Read-only on the old master → the new master writable.")
    catch_up_phase: CatchUpPhase | None = None
    window_steps: dict[str, float] | None = Field(
        None,
        description="Seconds of the window per step (old_master_read_only, wait_in_flight_commits, "
        "candidate_catch_up, promote_candidate).",
    )


class SwitchoverResult(SwitchesMaster):
    candidate_chosen_by: Literal["caller", "orchestrator"] | None = None
    plan: SwitchPlanView | None = None
    forecast: CatchUpPhase | None = Field(
        None, description="A dry run's half-second measurement of the load and the window a switchover now needs."
    )
    advice: list[str] | None = Field(None, description="What a dry run recommends (parallel apply, the budget).")


class ReplacesMaster(MovesWriter):
    """The moves of a failover (also a failover drill's): the candidate promoted in the old master's place."""

    candidate_ran: list[str] | None = Field(
        None,
        description="The candidate's connections running when the moves began: running again if the failover is "
        "undone before the promotion.",
    )

    role_moves_to_registered_server_id: int | None = Field(
        None, description="A better candidate the role moves to by a switchover once the failover ended."
    )
    promoted_after_s: float | None = Field(
        None, description="From fencing the old master (or finding it gone) to the new master writable."
    )
    possibly_lost: LostReport | None = None
    consumers: list[PlanConsumer] | None = Field(
        None,
        description="The change consumers connected to the servers of the move when it was planned (its dry run "
        "shows them), with what it does to each stream.",
    )
    consumers_note: str | None = Field(
        None,
        description="What the servers cannot know of their consumers, in words: which follow the master, and a lost "
        "master's, which cannot be listed.",
    )


class FailoverResult(ReplacesMaster):
    witnesses: list[str] | None = None
    hub_failover: HubFailoverPlan | None = None
    domains: list[DomainOrigin] | None = None
    follow_up_operation_id: int | None = None
    follow_up_error: str | None = None


class OnlyHereTransaction(Record):
    """A transaction only the rejoining server has, as its binlog tells it."""

    gtid: str
    commit_ts_us: int | None = None
    tables: list[str] = Field(default_factory=list)
    rows: int | None = None


class OnlyHereDomain(Record):
    """One domain's transactions only the rejoining server has (acknowledged to clients before it was replaced and
    never replicated): how many, the first and last GTID, and the newest of them as its binlog lists them."""

    domain: int
    count: int | None = Field(None, description="None when its binlog no longer lists them all.")
    first: str | None = None
    last: str
    reason: str
    transactions: list[OnlyHereTransaction] = Field(default_factory=list)


class CutDomain(Record):
    """One domain's transactions a rewind cut (or, dry, would cut), oldest first."""

    domain: int
    gtids: list[str]


class RejoinRewind(Record):
    """A rejoin's rewind: the position the server was rewound to, what was (would be) cut, and its archive."""

    to: str
    cut: list[CutDomain] = Field(default_factory=list)
    archive_name: str | None = Field(None, description="The archive's name on the server (it keeps its own copy).")
    archive_id: int | None = Field(None, description="The archive kept by the control plane (GET …/archives/{id}).")


class FollowedByCheck(Record):
    """An operation after which Ferry checks the server it brought back against its source (follow_up.py)."""

    consistency_check_operation_id: int | None = Field(
        None, description="The consistency check Ferry started once it replicated again (an operation of its own)."
    )
    consistency_check_error: str | None = Field(None, description="Why that check could not be started.")


class RejoinResult(OperationResult, FollowedByCheck):
    registered_server_id: int | None = None
    master_registered_server_id: int | None = None
    connection: str | None = None
    only_here: list[OnlyHereDomain] | None = Field(
        None, description="Per domain, what only this server has (a rejoin refuses while there is any, unless asked "
        "to rewind them)."
    )  # fmt: skip
    rewind: RejoinRewind | None = Field(None, description="With `resolve: rewind`: what was (would be) cut.")
    rebuild: RebuildResult | None = Field(
        None, description="With `resolve: rebuild`: the rebuild (donor, position, progress while it copies)."
    )
    rebuild_archive_id: int | None = Field(
        None, description="With `resolve: rebuild`: the archive of what only this server had (GET …/archives/{id})."
    )


#: A primary-key value as a chunk's bound shows it: one value per key column.
KeyBound = list[str | int | float]


class DriftedChunk(Record):
    """A chunk whose rows differ between the replica and its source at the same position."""

    index: int
    lower: KeyBound | None = Field(None, description="Its first key (inclusive); None: from the table's start.")
    upper: KeyBound | None = Field(None, description="The key it stops before; None: to the table's end.")
    source_rows: int
    replica_rows: int
    position: str = Field(description="The GTID position both were read at.")


class TableConsistency(Record):
    """One table compared chunk by chunk."""

    table: str
    key: list[str] = Field(default_factory=list, description="Its primary key's columns (none: one chunk).")
    chunks: int = 0
    source_rows: int = 0
    replica_rows: int = 0
    drifted: list[DriftedChunk] = Field(default_factory=list)
    missing_on: Literal["replica", "source"] | None = Field(None, description="The table exists on one side only.")


class ConsistencyCheckResult(OperationResult):
    registered_server_id: int | None = None
    source_registered_server_id: int | None = None
    connection: str | None = None
    tables: list[TableConsistency] = Field(default_factory=list)
    chunks_checked: int = 0
    chunks_drifted: int = 0
    consistent: bool | None = Field(None, description="Every chunk of every table equal (None: not finished).")


RebuildPhase = Literal["preflight", "starting", "copying", "preparing", "starting_server", "done", "replicating"]


class RebuildProgress(Record):
    """Where a rebuild's copy stands (updated about once a second while it runs): what the dashboard's progress bar
    and `ferryctl rebuild --wait` show."""

    phase: RebuildPhase
    bytes_done: int = 0
    bytes_total: int | None = Field(None, description="The donor's estimate of the whole copy (null: not known yet).")
    rate_bytes_s: float = Field(0.0, description="Bytes per second over the last few seconds.")
    eta_s: float | None = Field(None, description="Seconds left at that rate (null: not known, or paused).")
    paused: bool = False
    paused_reason: str | None = Field(None, description="Why the copy is paused (the donor trails its source).")


class RebuildResult(OperationResult, FollowedByCheck):
    registered_server_id: int | None = Field(None, description="The server rebuilt (the recipient).")
    donor_registered_server_id: int | None = Field(None, description="The server its data was copied from.")
    source_registered_server_id: int | None = Field(None, description="Who it replicates from afterwards.")
    connection: str | None = Field(None, description="The replication connection it replicates over afterwards.")
    position: str | None = Field(None, description="The GTID position the copy is consistent at (its gtid_slave_pos).")
    progress: RebuildProgress | None = None
    marked: bool | None = Field(
        None, description="Whether the recipient was marked (fenced with a reason saying so) while it was rebuilt."
    )


class FailoverDrillFigures(Record):
    """A failover drill's figures: how long writes were unavailable, what was lost, and the old master's rejoin."""

    rto_s: float | None = Field(
        None, description="RTO: from the old master's fence (drained on the proxies, then read-only) to the new master "
        "writable, as the failover measured it."
    )  # fmt: skip
    writer_rto_s: float | None = Field(
        None, description="RTO as the live canary writer saw it: its last write acknowledged by the old master → its "
        "first acknowledged by the new one."
    )  # fmt: skip
    rpo_lost: int | None = Field(
        None, description="RPO: canary writes the old master acknowledged that the new master lacked once it was "
        "writable (each read back on it right after the promotion). 0 for a live fence."
    )  # fmt: skip
    rpo_checked: int = Field(0, description="Canary writes the old master acknowledged, each looked for.")
    catch_up_s: float | None = Field(
        None, description="How long the candidate took to apply what the fenced old master had (inside the RTO)."
    )
    lost_canaries: list[str] = Field(default_factory=list, description="The first lost ones: `key (gtid)`.")
    only_on_old_master: list[OnlyHereDomain] = Field(
        default_factory=list,
        description="Per domain, transactions of any client in the old master's binlog the new master lacked after the "
        "promotion (from both binlog states, as a rejoin compares them).",
    )
    rejoined: bool = Field(False, description="The old master replicates from the new one again (the rejoin passed).")


class DrillResult(SwitchesMaster, ReplacesMaster):
    switchover: SwitchFigures | None = None
    failover: FailoverDrillFigures | None = Field(None, description="A failover drill's RTO, RPO and rejoin.")
    rejoin: RejoinResult | None = Field(None, description="A failover drill's rejoin of the old master.")
    drill_webhooks: list[WebhookCall] | None = None


class ReadOnlyResult(OperationResult):
    registered_server_id: int | None = None
    read_only: bool | None = None


class StartReplicationResult(OperationResult):
    registered_server_id: int | None = None
    connection: str | None = None
    until: str | None = None


class StopReplicationResult(OperationResult):
    registered_server_id: int | None = None
    connection: str | None = None


class RepointResult(OperationResult):
    registered_server_id: int | None = None
    master_registered_server_id: int | None = None
    connection: str | None = None


class BringLevelResult(OperationResult):
    registered_server_id: int | None = None
    source_registered_server_id: int | None = None
    target: str | None = None
    level_s: float | None = None


class SkipTransactionsResult(OperationResult):
    registered_server_id: int | None = None
    connection: str | None = None
    count: int | None = None
    stopped_by: StopReason | None = None
    skipped_gtids: list[str] | None = None
    skipped_gtids_source: str | None = None
    data_loss: str | None = Field(None, description="What the skip loses on that replica, in words.")
    replicating: bool | None = None
    gtid_slave_pos: str | None = None


class ParallelApplyResult(OperationResult):
    registered_server_id: int | None = None
    connection: str | None = None
    before: ParallelApplySettings | None = None
    after: ParallelApplySettings | None = None
    paused: list[str] | None = Field(
        None, description="Connections whose applying side stopped for the change and started again at its position."
    )
    gtid_slave_pos_before: str | None = None
    gtid_slave_pos_after: str | None = None


class OperationHookPayload(BaseModel):
    """What the pre-operation webhooks (`stage` pre: before any change; a refusal aborts) and the post-operation ones
    (`stage` post: the final state, error and result) are POSTed. Only the fields given are sent."""

    stage: Literal["pre", "post"]
    operation_id: int
    cluster_id: int
    type: str
    params: SerializeAsAny[BaseModel] | None = Field(description="None when the stored parameters could not be read.")
    requester: str
    old_master_registered_server_id: int | None = None
    new_master_registered_server_id: int | None = None
    state: str | None = None
    error: str | None = None
    result: SerializeAsAny[OperationResult] | None = None

    def body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)
