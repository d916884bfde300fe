"""Operation shapes: the operation resource with its live steps (one model per type, discriminated by `type`, with
that type's parameters and result), one request body per operation type, and the parameters each carries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, field_validator, model_validator

from ferry_control.core.enums import OperationState
from ferry_control.schemas.common import ID_MAX, GtidPositionText
from ferry_control.schemas.operation_results import (
    BringLevelResult,
    ConsistencyCheckResult,
    DrillResult,
    FailoverResult,
    OperationResult,
    ParallelApplyResult,
    ReadOnlyResult,
    RebuildResult,
    RejoinResult,
    RepointResult,
    SkipTransactionsResult,
    StartReplicationResult,
    StopReplicationResult,
    SwitchoverResult,
)
from ferry_control.schemas.registered_ids import read_old_names

if TYPE_CHECKING:
    from ferry_control.models import Operation

ConnectionName = Field(
    None,
    pattern=r"^[A-Za-z0-9_]{1,64}$",
    description="The replica's connection name; default: its only connection, else the configured default name.",
    examples=["main"],
)
DryRun = Field(False, description="Run the preflight only: nothing is changed; the checks are in the result.")
ServerRef = Field(ge=1, le=ID_MAX, description="A registered server's id in this cluster.", examples=[2])


StepState = Literal["running", "passed", "failed", "skipped"]


class OperationStep(BaseModel):
    """One step of an operation, updated live as it runs. Every step record is made here: `begin` as it starts,
    `end` as it ends, `instant` for one recorded at once (a reconcile). Times are UTC, written with `Z`; rows written
    with `+00:00` read the same."""

    name: str = Field(examples=["candidate_catch_up"])
    state: StepState = Field(examples=["passed"])
    started_at: datetime
    finished_at: datetime | None = None
    duration_s: float | None = Field(None, examples=[0.084])
    detail: Any = Field(None, description="What the step found or did (text, or an object for checks and lists).")

    @classmethod
    def begin(cls, name: str, detail: Any = None) -> OperationStep:
        return cls(name=name, state="running", started_at=datetime.now(UTC), detail=detail)

    def end(self, state: StepState, detail: Any, duration_s: float | None) -> None:
        """Ends the step now; `duration_s` as measured by the caller on a monotonic clock (None: not known)."""
        self.state, self.detail, self.finished_at = state, detail, datetime.now(UTC)
        self.duration_s = None if duration_s is None else round(duration_s, 6)

    @classmethod
    def instant(cls, name: str, state: StepState, detail: Any, duration_s: float | None = None) -> OperationStep:
        now = datetime.now(UTC)
        return cls(name=name, state=state, started_at=now, finished_at=now, duration_s=duration_s, detail=detail)

    def stored(self) -> dict[str, Any]:
        """As the operation's row keeps it (JSON)."""
        return self.model_dump(mode="json")


class OperationReadBase(BaseModel):
    """What every operation has: who asked, its state, its steps as they happen, and the error it ended with."""

    id: int
    cluster_id: int
    state: OperationState
    dry_run: bool
    steps: list[OperationStep]
    requester: str
    idempotency_key: str | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    if TYPE_CHECKING:
        # What every kind's read model adds (its own `type`, parameters and result), as a type checker sees any kind.
        type: str
        params: OperationParams
        result: OperationResult | None


class OperationRequest(BaseModel):
    """A request body: the operation's parameters and whether it is a dry run."""

    model_config = ConfigDict(extra="forbid")

    dry_run: bool = DryRun


class OperationParams(BaseModel):
    """What an operation was asked to do: validated from the request, stored with the operation (its `params`), and
    validated again from the row into its executor (`ctx.params`), which may run in another process. A key a row has
    and the model does not is ignored; a request with one is refused (`OperationRequest`)."""

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, value: Any) -> Any:
        """A row's ids of registered servers stored under their old names read under the new ones
        (schemas/registered_ids.py); a request body (extra keys forbidden) is refused an old name instead."""
        if cls.model_config.get("extra") == "forbid":
            return value
        return read_old_names(cls.model_fields, value)

    def stored(self) -> dict[str, Any]:
        """As the operation's row keeps it: the fields given (a default not asked for is not written)."""
        return self.model_dump(mode="json", exclude_unset=True)


class SwitchoverParams(OperationParams):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"candidate_registered_server_id": 2, "expected_master_registered_server_id": 1}]
        },
    )

    candidate_registered_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The new master; unset: the replica ahead of all others (or made so by catching up).",
    )
    expected_master_registered_server_id: int | None = Field(
        None, ge=1, le=ID_MAX, description="Refuse (check `expected_master`) unless this server is the master now."
    )
    source_registered_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The source whose role moves: a master of several, or an intermediate master (one with "
        "incoming connections: its candidate takes them over under the same names). Unset: the candidate's only "
        "master, else the cluster's only master.",
    )
    max_window_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="The write-unavailability budget: the candidate catches up while the master takes writes until "
        "the predicted window fits it. Unset: the cluster's, else the control plane's `switchover_max_window_s`.",
    )
    prepare_timeout_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="How long the catch-up before the window may wait; then the switchover fails having changed "
        "nothing. Unset: `switchover_prepare_timeout_s`.",
    )


class FailoverChoice(OperationParams):
    model_config = ConfigDict(json_schema_extra={"examples": [{"candidate_registered_server_id": None}]})

    candidate_registered_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The new master; unset: the most advanced replica (leveled from its peers first).",
    )
    source_registered_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The master to replace, in a cluster of several (the two-master shape has two); unset: the only "
        "master, or of several the only one lost. The candidate is one of its direct replicas; a multi-source "
        "candidate keeps its connections to the other masters.",
    )


class FailoverParams(FailoverChoice):
    automatic: bool = Field(
        False, description="Started by the failover monitor (a replica must have confirmed the loss), not by a person."
    )


class RepointParams(OperationParams):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"registered_server_id": 3, "master_registered_server_id": 2, "use_gtid": "slave_pos"}]
        },
    )

    registered_server_id: int = ServerRef
    master_registered_server_id: int = Field(
        ge=1, le=ID_MAX, description="The server it should replicate from.", examples=[2]
    )
    use_gtid: Literal["slave_pos", "current_pos"] = Field(
        "slave_pos", description="`current_pos` for a former master whose own transactions are in its binlog."
    )
    connection: str | None = ConnectionName

    @model_validator(mode="after")
    def _not_itself(self) -> RepointParams:
        if self.registered_server_id == self.master_registered_server_id:
            raise ValueError(f"the server with id {self.registered_server_id} cannot replicate from itself")
        return self


class RejoinParams(OperationParams):
    model_config = ConfigDict(json_schema_extra={"examples": [{"registered_server_id": 1}]})

    registered_server_id: int = Field(
        ge=1, le=ID_MAX, description="The server to bring back: a fenced former master (or a stray read-only one).",
        examples=[1],
    )  # fmt: skip
    master_registered_server_id: int | None = Field(
        None,
        ge=1,
        le=ID_MAX,
        description="The source it follows; unset: the cluster's one writable master that replicates from nobody.",
    )
    resolve: Literal["rewind", "rebuild"] | None = Field(
        None,
        description="What to do with transactions only this server has (acknowledged before it was replaced, never "
        "replicated). Unset: the rejoin refuses, changing nothing, and lists them. `rewind`: the server cuts them — "
        "archived first, the archive downloaded and kept by the control plane (GET …/archives) — and rejoins. "
        "`rebuild`: what its binlog tells of them (GTIDs, times, tables, rows) is archived by the control plane "
        "(GET …/archives), then the server is rebuilt from a donor (as POST …/operations/rebuild does) and "
        "replicates from the source.",
    )

    @model_validator(mode="after")
    def _not_itself(self) -> RejoinParams:
        if self.registered_server_id == self.master_registered_server_id:
            raise ValueError(f"the server with id {self.registered_server_id} cannot rejoin as a replica of itself")
        return self


class RebuildParams(OperationParams):
    model_config = ConfigDict(json_schema_extra={"examples": [{"registered_server_id": 3, "throttle_mb_s": 100}]})

    registered_server_id: int = Field(
        ge=1, le=ID_MAX, description="The server to rebuild (the recipient): a replica, never the master.", examples=[3]
    )
    donor_registered_server_id: int | None = Field(
        None, ge=1, le=ID_MAX,
        description="The server to copy from; unset: a healthy replica (not the recipient) with every domain, the "
        "least lagging.",
    )  # fmt: skip
    force_master_donor: bool = Field(
        False, description="Allow the master as the donor (its copy loads it; refused otherwise)."
    )
    throttle_mb_s: float | None = Field(
        None, gt=0, le=100_000, description="The copy's rate limit in MB/s (10^6 bytes); unset: as fast as it goes."
    )
    resume: bool = Field(False, description="Continue an interrupted copy from the same donor, where the kind can.")

    @model_validator(mode="after")
    def _not_itself(self) -> RebuildParams:
        if self.registered_server_id == self.donor_registered_server_id:
            raise ValueError(f"the server with id {self.registered_server_id} cannot be rebuilt from itself")
        return self


class ReadOnlyParams(OperationParams):
    model_config = ConfigDict(json_schema_extra={"examples": [{"registered_server_id": 1, "read_only": True}]})

    registered_server_id: int = ServerRef
    read_only: bool


class StartReplicationParams(OperationParams):
    model_config = ConfigDict(json_schema_extra={"examples": [{"registered_server_id": 3, "until": "1-1-40,2-2-17"}]})

    registered_server_id: int = ServerRef
    connection: str | None = ConnectionName
    until: GtidPositionText | None = Field(
        None, description="START … UNTIL: each listed domain up to its GTID, then the connection stops."
    )


class StopReplicationParams(OperationParams):
    model_config = ConfigDict(json_schema_extra={"examples": [{"registered_server_id": 3}]})

    registered_server_id: int = ServerRef
    connection: str | None = ConnectionName


class BringLevelParams(OperationParams):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"registered_server_id": 3, "source_registered_server_id": 2, "timeout_s": 30}]}
    )

    registered_server_id: int = ServerRef
    source_registered_server_id: int = Field(ge=1, le=ID_MAX, description="The server to get level with.", examples=[2])
    timeout_s: float | None = Field(None, gt=0, le=300, description="Bound on the wait; default: the catch-up timeout.")

    @model_validator(mode="after")
    def _not_itself(self) -> BringLevelParams:
        if self.registered_server_id == self.source_registered_server_id:
            raise ValueError(f"the server with id {self.registered_server_id} is always level with itself")
        return self


class ConsistencyCheckParams(OperationParams):
    """A replica compared with its source, table by table and chunk by chunk of primary key, at the same GTID
    position: nothing is written and nothing is locked."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"registered_server_id": 3, "chunk_rows": 10000}]})

    registered_server_id: int = Field(
        ge=1, le=ID_MAX, description="The replica to check against the source it replicates from.", examples=[3]
    )
    connection: str | None = ConnectionName
    chunk_rows: int = Field(10_000, ge=10, le=1_000_000, description="About how many rows a chunk holds.")
    chunks_per_stop: int = Field(
        10, ge=1, le=1000,
        description="Chunks compared per stop of the replica at the source's position (its connection is stopped "
        "with START … UNTIL that position, read, and started again, each time).",
    )  # fmt: skip
    pause_ms: int = Field(
        0,
        ge=0,
        le=60_000,
        description="Throttle: a pause between two such stops, so the replica keeps up between them.",
    )
    tables: list[str] | None = Field(
        None,
        max_length=1000,
        description="Only these tables (`schema.table`); unset: every user table of the source.",
    )

    @field_validator("tables")
    @classmethod
    def _table_names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or []:
            schema, _, table = name.partition(".")
            if not schema or not table or len(name) > 129:
                raise ValueError(f"a table is named `schema.table`, not {name!r}")
        return value


class SkipTransactionsParams(OperationParams):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"registered_server_id": 3, "connection": "main", "count": 1}]}
    )

    registered_server_id: int = ServerRef
    connection: str | None = ConnectionName
    count: int = Field(
        1,
        ge=1,
        le=100,
        description="How many transactions to skip, from the one that stopped the connection (sql_slave_skip_counter). "
        "They are lost on that replica.",
        examples=[1],
    )


class ParallelApplyParams(OperationParams):
    """A replica connection's parallel apply, changed online. What is left out stays as it is."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"registered_server_id": 3, "mode": "optimistic", "workers": 8, "domain_workers_max": 8}]
        }
    )

    registered_server_id: int = ServerRef
    connection: str | None = ConnectionName
    mode: str | None = Field(
        None, pattern=r"^[a-z_]{1,32}$", examples=["optimistic"],
        description="ferryd: serial, conservative, optimistic; MariaDB (slave_parallel_mode): none, minimal, "
        "conservative, optimistic, aggressive.",
    )  # fmt: skip
    workers: int | None = Field(
        None, ge=0, le=16383, examples=[8],
        description="Transactions applied at once: ferryd 1 to 256; MariaDB slave_parallel_threads 0 to 16383 (0: the "
        "SQL thread applies alone; a pool for the whole server: changing it pauses every connection's SQL thread for "
        "the moment).",
    )  # fmt: skip
    domain_workers_max: int | None = Field(
        None, ge=0, le=16383, examples=[8],
        description="Workers at most per domain, up to `workers`: ferryd at least 1; MariaDB "
        "slave_domain_parallel_threads (0: no limit).",
    )  # fmt: skip

    @model_validator(mode="after")
    def _something(self) -> ParallelApplyParams:
        if self.mode is None and self.workers is None and self.domain_workers_max is None:
            raise ValueError("give at least one of mode, workers, domain_workers_max")
        return self


class SwitchoverRequest(SwitchoverParams, OperationRequest):
    """The body of POST …/switchover."""

    model_config = ConfigDict(extra="forbid")


class FailoverRequest(FailoverChoice, OperationRequest):
    """The body of POST …/failover."""

    model_config = ConfigDict(extra="forbid")


class RepointRequest(RepointParams, OperationRequest):
    """The body of POST …/repoint."""

    model_config = ConfigDict(extra="forbid")


class RejoinRequest(RejoinParams, OperationRequest):
    """The body of POST …/rejoin."""

    model_config = ConfigDict(extra="forbid")


class ConsistencyCheckRequest(ConsistencyCheckParams, OperationRequest):
    """The body of POST …/consistency-check."""

    model_config = ConfigDict(extra="forbid")


class RebuildRequest(RebuildParams, OperationRequest):
    """The body of POST …/rebuild."""

    model_config = ConfigDict(extra="forbid")


class ReadOnlyRequest(ReadOnlyParams, OperationRequest):
    """The body of POST …/read-only."""

    model_config = ConfigDict(extra="forbid")


class StartReplicationRequest(StartReplicationParams, OperationRequest):
    """The body of POST …/start-replication."""

    model_config = ConfigDict(extra="forbid")


class StopReplicationRequest(StopReplicationParams, OperationRequest):
    """The body of POST …/stop-replication."""

    model_config = ConfigDict(extra="forbid")


class BringLevelRequest(BringLevelParams, OperationRequest):
    """The body of POST …/bring-level."""

    model_config = ConfigDict(extra="forbid")


#: The API's description of POST …/operations/skip_transactions (in the schemas, beside its body: it names how each
#: server kind does it, which services leave to the drivers).
SKIP_TRANSACTIONS_DESCRIPTION = (
    "For a connection stopped by an SQL error (e.g. MariaDB's 1062 duplicate key) or stopped by "
    "hand: names the GTIDs that will be skipped (the next ones after the replica's gtid_slave_pos in its "
    "master's binlog, else the one the error names), sets the skip counter (sql_slave_skip_counter), starts "
    "the connection and checks that it replicates again. The skipped transactions are not applied on that "
    "replica and never will be: the result's `data_loss` says so. 404 `connection_not_found`, 409 "
    "`connection_running` (nothing changed); `count` is 1 to 100."
)

#: The API's description of POST …/operations/parallel_apply.
PARALLEL_APPLY_DESCRIPTION = (
    "The connection's applying side stops at a transaction boundary and starts again at its "
    "position (MariaDB: STOP/START SLAVE 'c' SQL_THREAD around SET GLOBAL; slave_parallel_threads is one pool "
    "for the whole server, so a new worker count pauses every connection's SQL thread for the moment), or "
    "takes the change between two commit groups (ferryd); the receiving side goes on; nothing is skipped or "
    "applied twice. What the body leaves out stays as it is. 404 `connection_not_found`, 422 "
    "`parallel_apply_invalid` (values the server's kind refuses; nothing changed). See GET "
    "…/servers/{id}/parallel-apply for the rates."
)


#: The API's description of POST …/operations/rebuild (here, beside its body: it names how each server kind copies).
REBUILD_DESCRIPTION = (
    "Preflight (nothing changed when refused): the recipient is a replica of this cluster that "
    "answers; the donor (named, else the least lagging healthy replica with every domain) is of its kind, "
    "answers, has every domain, and is the master only with force_master_donor; the host access its kind needs "
    "is set. Then the recipient is marked (fenced, with a reason), its replication stopped, read-only; the "
    "copy runs (MariaDB: mariadb-backup streamed over SSH through the control plane; ferryd: its clone), "
    "throttled by throttle_mb_s and paused while the donor trails by more than the cluster's "
    "donor_lag_pause_s; it replicates from its source with MASTER_USE_GTID=slave_pos at the copy's position, "
    "and is unmarked once it follows. `result.progress` (phase, bytes, rate, ETA, paused) moves about once a "
    "second. POST …/{operation_id}/cancel stops it: the recipient is left stopped and marked."
)


class SkipTransactionsRequest(SkipTransactionsParams, OperationRequest):
    """The body of POST …/skip-transactions."""

    model_config = ConfigDict(extra="forbid")


class ParallelApplyRequest(ParallelApplyParams, OperationRequest):
    """The body of POST …/parallel-apply."""

    model_config = ConfigDict(extra="forbid")


class DrillParams(OperationParams):
    """A drill's operation: its run's plan (services/drills.py) and the run it belongs to."""

    kind: Literal["switchover", "failover"] = "switchover"
    candidate_strategy: Literal["fixed", "rotation"] = "rotation"
    candidate_registered_server_id: int | None = None
    switch_back: bool = False
    source_registered_server_id: int | None = None
    webhook_url: str | None = None
    drill_run_id: int | None = Field(None, description="The run it carries out (None: a failover drill's dry run).")


class SwitchoverOperation(OperationReadBase):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 7, "cluster_id": 1, "type": "switchover", "state": "succeeded", "dry_run": False,
                    "params": {"candidate_registered_server_id": 2}, "requester": "alice",
                    "steps": [{"name": "preflight", "state": "passed", "started_at": "2026-11-21T13:00:00Z",
                               "finished_at": "2026-11-21T13:00:00.2Z", "duration_s": 0.2, "detail": None}],
                    "idempotency_key": "b0c7…", "error": None,
                    "result": {"unavailable_s": 0.41, "old_master_registered_server_id": 1,
                               "new_master_registered_server_id": 2},
                    "created_at": "2026-11-21T13:00:00Z", "started_at": "2026-11-21T13:00:00Z",
                    "finished_at": "2026-11-21T13:00:02Z",
                }
            ]
        },
    )  # fmt: skip

    type: Literal["switchover"]
    params: SwitchoverParams
    result: SwitchoverResult | None = None


class FailoverOperation(OperationReadBase):
    type: Literal["failover"]
    params: FailoverParams
    result: FailoverResult | None = None


class RepointOperation(OperationReadBase):
    type: Literal["repoint"]
    params: RepointParams
    result: RepointResult | None = None


class ReadOnlyOperation(OperationReadBase):
    type: Literal["read_only"]
    params: ReadOnlyParams
    result: ReadOnlyResult | None = None


class StartReplicationOperation(OperationReadBase):
    type: Literal["start_replication"]
    params: StartReplicationParams
    result: StartReplicationResult | None = None


class StopReplicationOperation(OperationReadBase):
    type: Literal["stop_replication"]
    params: StopReplicationParams
    result: StopReplicationResult | None = None


class BringLevelOperation(OperationReadBase):
    type: Literal["bring_level"]
    params: BringLevelParams
    result: BringLevelResult | None = None


class SkipTransactionsOperation(OperationReadBase):
    type: Literal["skip_transactions"]
    params: SkipTransactionsParams
    result: SkipTransactionsResult | None = None


class ParallelApplyOperation(OperationReadBase):
    type: Literal["parallel_apply"]
    params: ParallelApplyParams
    result: ParallelApplyResult | None = None


class DrillOperation(OperationReadBase):
    type: Literal["drill"]
    params: DrillParams
    result: DrillResult | None = None


class RejoinOperation(OperationReadBase):
    type: Literal["rejoin"]
    params: RejoinParams
    result: RejoinResult | None = None


class ConsistencyCheckOperation(OperationReadBase):
    type: Literal["consistency_check"]
    params: ConsistencyCheckParams
    result: ConsistencyCheckResult | None = None


class RebuildOperation(OperationReadBase):
    type: Literal["rebuild"]
    params: RebuildParams
    result: RebuildResult | None = None


def _read_models() -> tuple[type[OperationReadBase], ...]:
    """Every operation kind's read model: each subclass of `OperationReadBase` defined above, in their order — a
    kind's read model is its one declaration here (services/orchestrator/kinds.py declares what runs it)."""
    return tuple(OperationReadBase.__subclasses__())


if TYPE_CHECKING:
    #: To a type checker: any kind's read model (narrowed by `isinstance` to one).
    AnyOperation = OperationReadBase
else:
    #: Any kind's read model, discriminated by its `type` (the union of every kind's, built from their declarations).
    AnyOperation = Annotated[Union[_read_models()], Field(discriminator="type")]  # noqa: UP007 (a runtime tuple)


def _variants() -> dict[str, type[OperationReadBase]]:
    """Each type's read model by its `type` (its members are the types there are)."""
    return {get_args(m.model_fields["type"].annotation)[0]: m for m in _read_models()}


#: Each operation type's read model (a member of `AnyOperation`).
VARIANTS: dict[str, type[OperationReadBase]] = _variants()
#: The operation types, in `AnyOperation`'s order (the API's enum of them).
OPERATION_TYPES: tuple[str, ...] = tuple(VARIANTS)
#: Each operation type's parameters.
PARAMS: dict[str, type[OperationParams]] = {
    t: v.model_fields["params"].annotation  # type: ignore[misc]
    for t, v in VARIANTS.items()
}
#: Each operation type's result.
RESULTS: dict[str, type[OperationResult]] = {
    t: next(a for a in get_args(v.model_fields["result"].annotation) if a is not type(None))
    for t, v in VARIANTS.items()
}


class OperationRead(RootModel[AnyOperation]):
    """An operation with its live steps: `params` and `result` are its type's (discriminated by `type`)."""

    @classmethod
    def of(cls, operation: Operation) -> OperationRead:
        """From its row. Parameters or a result a row holds that its type's model refuses (a row no request could
        have written) are shown as stored rather than failing the whole read."""
        columns = {c: getattr(operation, c) for c in OperationReadBase.model_fields}
        params = lenient(PARAMS[operation.type], operation.params or {})
        result = None if operation.result is None else lenient(RESULTS[operation.type], operation.result)
        fields = {**columns, "type": operation.type, "params": params, "result": result}
        try:
            return cls.model_validate(fields)
        except ValidationError:  # parameters or a result read leniently: not validated again
            variant: Any = VARIANTS[operation.type].model_construct(**fields)  # its type's model, not validated
            return cls.model_construct(variant)


M = TypeVar("M", bound=BaseModel)


def lenient(model: type[M], stored: dict[str, Any]) -> M:
    """The stored JSON as `model`; where it does not validate, its known keys as stored (not validated) and a
    required one it lacks as None."""
    try:
        return model.model_validate(stored)
    except ValidationError:
        missing = {name: None for name, field in model.model_fields.items() if field.is_required()}
        return model.model_construct(**{**missing, **{k: v for k, v in stored.items() if k in model.model_fields}})
