"""The bodies of a ferryd node's admin API (docs/node-api.md) that the `ferry` driver reads and sends, as pydantic
models: what the driver reads of each answer (`ANSWERS`, by route) and the requests it sends (`REQUESTS`). The
engine publishes its side as JSON Schema (engine/crates/ferryd/admin-api.schema.json); a test compares the two
(tests/drivers/test_ferry_admin_schema.py), so a field the engine renames or retypes fails there, not in production.

Models are strict (a boolean is no integer, a number no string) and ignore fields they do not read. A node that
answers a body that does not validate gets an `AnswerInvalid` naming the field, its place and what it was
(`replication[0]: lag of domain '1' is 'x', not an object`, `lacks 'read_only'`); the driver makes it its protocol
error.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo
from pydantic_core import ErrorDetails

from ferry_control.drivers import base
from ferry_control.drivers.base import IoState, SqlState

#: Bounds of what a node's binlog listing and checksums may hold (beyond them the answer is a protocol error).
UINT32_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
TABLES_PER_EVENT_MAX = 1024
TABLE_NAME_MAX = 300
CHECKSUM_TABLES_MAX = 100_000

_M = TypeVar("_M", bound=BaseModel)
_E = TypeVar("_E", bound=enum.Enum)


class AnswerInvalid(ValueError):
    """A node's answer that does not validate; the message names the field, where it is and what was wrong."""


def shown(value: Any) -> str:
    """A value a node sent, as an error message quotes it (bounded: a hostile node may send megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


# -- field types -------------------------------------------------------------------------------------------------


def _within(low: int, high: int) -> AfterValidator:
    def check(value: int, info: ValidationInfo) -> int:
        if not low <= value <= high:
            raise ValueError(f"{info.field_name} {value} is outside {low}..{high}")
        return value

    return AfterValidator(check)


UInt32 = Annotated[int, _within(0, UINT32_MAX)]
Int64 = Annotated[int, _within(0, INT64_MAX)]
UInt64 = Annotated[int, _within(0, UINT64_MAX)]


def _member_of(kind: type[_E]) -> BeforeValidator:
    """A value of the enum `kind`, refused in the enum's own words (`'dancing' is not a valid IoState`)."""

    def check(value: Any) -> _E:
        try:
            return kind(value)
        except TypeError:  # an unhashable value
            raise ValueError(f"{shown(value)} is not a valid {kind.__name__}") from None

    return BeforeValidator(check)


def _table_name(value: Any) -> Any:
    if not isinstance(value, str) or len(value) > TABLE_NAME_MAX:
        raise ValueError(f"a table name is {shown(value)}, not a string of at most {TABLE_NAME_MAX} characters")
    return value


def _short(value: str | None, info: ValidationInfo) -> str | None:
    if value is not None and len(value) > TABLE_NAME_MAX:
        raise ValueError(f"{info.field_name} {shown(value)} is longer than {TABLE_NAME_MAX} characters")
    return value


TableName = Annotated[str, BeforeValidator(_table_name)]


class AdminModel(BaseModel):
    """A body of the admin API: strict, fields it does not name ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


# -- answers -------------------------------------------------------------------------------------------------------


class DomainLag(AdminModel):
    transactions: int
    seconds: float


class ReplError(AdminModel):
    side: str
    code: str
    message: str
    at_us: int | None = None
    #: The failing transaction, where a node reports it (else its message may name it: `applying 1-1-3: …`).
    gtid: str | None = None


class Parallel(AdminModel):
    mode: str | None = None
    workers: int | None = None
    domain_workers_max: int | None = None


class Connection(AdminModel):
    """One replication connection (`replication` of the status, `connections` of GET /v1/replication)."""

    name: str
    master: str
    running: bool
    io_state: Annotated[IoState, _member_of(IoState)]
    sql_state: Annotated[SqlState, _member_of(SqlState)]
    received_position: str = ""
    applied_position: str = ""
    master_position: str = ""
    lag: dict[str, DomainLag] | None = None
    last_error: ReplError | None = None
    until: str | None = None
    delay_s: int | None = None
    waiting_for_relay_space: bool | None = None
    heartbeat_ms: int | None = None
    ignore_duplicates: bool = False
    parallel: Parallel | None = None
    do_domain_ids: list[int] | None = None
    ignore_domain_ids: list[int] | None = None
    skip_counter: int | None = None


class Replica(AdminModel):
    """A replica streaming from the node."""

    server_id: int
    address: str
    sent_position: str = ""
    listen: str | None = None
    admin: str | None = None


class Consumer(AdminModel):
    """A change consumer streaming from the node, with its lag per domain."""

    name: str
    address: str
    domains: list[int]
    start_position: str
    position: str
    connected_at_us: int
    transactions_sent: int
    lag: dict[str, DomainLag] | None = None


class CutOff(AdminModel):
    """A change consumer the node cut off."""

    name: str
    address: str
    position: str
    at_us: int
    reason: str


class BinlogFile(AdminModel):
    name: str


class SemiSync(AdminModel):
    #: `on` or `fallen_back`.
    state: str | None = None


class HeldBack(AdminModel):
    file: str
    replica: str


class BinlogExpiry(AdminModel):
    held_back: HeldBack | None = None
    last_error: str | None = None


class StatusWarnings(AdminModel):
    """What of a status tells an operator to look: semi-sync and binlog expiry."""

    semi_sync: SemiSync | None = None
    binlog_expiry: BinlogExpiry | None = None


class CloneIncomplete(AdminModel):
    """A status's `clone_incomplete`: the node's unfinished clone (its data is incomplete until one completes)."""

    clone_id: str
    donor: str
    state: Literal["copying", "failed", "cancelled"]
    error: str | None = None
    position: str | None = None


class Status(StatusWarnings):
    """GET /v1/status (fields in the order they are checked: the first wrong one is named)."""

    server_id: int
    read_only: bool
    gtid_binlog_pos: str
    gtid_slave_pos: str = ""
    gtid_current_pos: str
    gtid_binlog_state: str = ""
    replication: list[Connection] | None = None
    replicas: list[Replica] | None = None
    failed: str | None = None
    default_domain: int = 0
    binlog_files: list[BinlogFile] | None = None
    listen: str | None = None
    version: str | None = None
    api_version: int | None = None
    replicas_may_be_ahead: bool | None = None
    consumers: list[Consumer] | None = None
    clone_incomplete: CloneIncomplete | None = None


class Replication(AdminModel):
    """GET /v1/replication."""

    connections: list[Connection]


class Replicas(AdminModel):
    """GET /v1/replicas."""

    replicas: list[Replica]


class Consumers(AdminModel):
    """GET /v1/consumers."""

    consumers: list[Consumer] | None = None
    cut_off: list[CutOff] | None = None
    cut_off_total: int
    consumers_max: int


class Event(AdminModel):
    """One transaction of GET /v1/binlog/events."""

    domain: UInt32
    server_id: UInt32
    seq_no: Int64
    gtid: str
    tables: Annotated[list[TableName], Field(max_length=TABLES_PER_EVENT_MAX)] | None = None
    file: Annotated[str | None, AfterValidator(_short)] = None
    commit_id: Int64 | None = None
    commit_ts_us: Int64 | None = None
    offset: Int64 | None = None
    rows: Int64 | None = None


class Events(AdminModel):
    """GET /v1/binlog/events."""

    events: list[Event]
    next_before: Int64 | None = None


class TableChecksum(AdminModel):
    rows: Int64
    checksum: UInt64


def _tables(tables: dict[str, TableChecksum]) -> dict[str, TableChecksum]:
    if len(tables) > CHECKSUM_TABLES_MAX:
        raise ValueError(f"tables lists {len(tables)} tables, more than {CHECKSUM_TABLES_MAX}")
    for name in tables:
        if len(name) > TABLE_NAME_MAX:
            raise ValueError(f"table {shown(name)}: a name longer than {TABLE_NAME_MAX} characters")
    return tables


class Checksums(AdminModel):
    """GET /v1/checksums."""

    position: str
    tables: Annotated[dict[str, TableChecksum], AfterValidator(_tables)]


class ReadOnly(AdminModel):
    """POST /v1/read-only."""

    read_only: bool


class WritesStopped(AdminModel):
    """POST /v1/read-only with `wait_for_in_flight_ms`: where client writes stopped, once they had their answers."""

    gtid_binlog_pos: str
    in_flight_at_read_only: Int64
    waited_ms: float


class Waited(AdminModel):
    """POST /v1/wait-for-position."""

    reached: bool
    position: str


class CutTransaction(AdminModel):
    """One transaction a rewind cuts (or, dry, would cut)."""

    gtid: str
    file: Annotated[str, AfterValidator(_short)]
    offset: Int64
    commit_ts_us: Int64
    tables: Annotated[list[TableName], Field(max_length=TABLES_PER_EVENT_MAX)]
    rows: Int64


class Rewound(AdminModel):
    """POST /v1/rewind: what the rewind cut (or would cut, with a dry run) and where it left the node."""

    to: str
    dry_run: bool
    cut: list[CutTransaction]
    archive: str | None = None
    gtid_binlog_state: str
    gtid_slave_pos: str
    #: The store is (would be) put back by replaying the kept binlog: a cut transaction has no before images.
    by_replay: bool


class RewindArchives(AdminModel):
    """GET /v1/rewind/archives."""

    archives: list[str]


class CloneView(AdminModel):
    """GET /v1/clone: the node's clone (as a recipient) and its progress."""

    state: Literal["idle", "copying", "done", "failed", "cancelled"]
    clone_id: str | None = None
    donor: str | None = None
    bytes_done: Int64
    bytes_total: Int64 | None = None
    rate_bytes_s: float
    throttle_mb_s: float | None = None
    paused: bool
    position: str | None = None
    resumed_bytes: Int64
    error: str | None = None


class CloneStarted(CloneView):
    """POST /v1/clone: the clone started (or resumed)."""


class CloneChanged(CloneView):
    """PATCH /v1/clone: the clone with its new throttle or pause."""


class CloneCancelled(CloneView):
    """DELETE /v1/clone: the clone once it has stopped."""


#: The answers the driver reads, each with its route and the answer's key there, as the engine's schema names them
#: (`response`, or the answer to a request that asks for more).
ANSWERS: dict[type[AdminModel], tuple[str, str]] = {
    Status: ("GET /v1/status", "response"),
    Replication: ("GET /v1/replication", "response"),
    Replicas: ("GET /v1/replicas", "response"),
    Consumers: ("GET /v1/consumers", "response"),
    Events: ("GET /v1/binlog/events", "response"),
    Checksums: ("GET /v1/checksums", "response"),
    ReadOnly: ("POST /v1/read-only", "response"),
    WritesStopped: ("POST /v1/read-only", "response (wait_for_in_flight_ms)"),
    Waited: ("POST /v1/wait-for-position", "response"),
    Rewound: ("POST /v1/rewind", "response"),
    RewindArchives: ("GET /v1/rewind/archives", "response"),
    CloneView: ("GET /v1/clone", "response"),
    CloneStarted: ("POST /v1/clone", "response"),
    CloneChanged: ("PATCH /v1/clone", "response"),
    CloneCancelled: ("DELETE /v1/clone", "response"),
}


#: Fields a model reads that this engine does not write (`Model.field`), each optional: a node's version (ferryd
#: reports its `api_version`) and the failing transaction of an SQL error (ferryd names it in the message).
NOT_WRITTEN = frozenset({"Status.version", "ReplError.gtid"})


# -- requests ------------------------------------------------------------------------------------------------------


class Request(BaseModel):
    """A body the driver sends; fields left None are left out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def body(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class ChangeMasterRequest(Request):
    master: str
    use_gtid: Literal["slave_pos", "current_pos"]
    ignore_duplicates: bool
    delay_s: int
    position: str | None = None
    file: str | None = None
    offset: int | None = None
    heartbeat_ms: int | None = None
    #: `serial`, `conservative` or `optimistic` (the node refuses another).
    parallel_mode: str | None = None
    workers: int | None = None
    domain_workers_max: int | None = None
    do_domain_ids: list[int] | None = None
    ignore_domain_ids: list[int] | None = None


class StartRequest(Request):
    until: str | None = None


class SkipCounterRequest(Request):
    count: int


class ParallelRequest(Request):
    mode: str
    workers: int
    domain_workers_max: int


class ReadOnlyRequest(Request):
    read_only: bool
    wait_for_in_flight_ms: int | None = None


class WaitRequest(Request):
    position: str
    timeout_ms: int


class RewindRequest(Request):
    to: str
    dry_run: bool


class CloneRequest(Request):
    donor: str
    throttle_mb_s: float | None = None
    resume: bool


class CloneChange(Request):
    """Both fields always sent: a null throttle lifts it."""

    throttle_mb_s: float | None
    paused: bool

    def body(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


#: The requests the driver sends, each with its route.
REQUESTS: dict[type[Request], str] = {
    ChangeMasterRequest: "POST /v1/replication/{name}/change-master",
    StartRequest: "POST /v1/replication/{name}/start",
    SkipCounterRequest: "POST /v1/replication/{name}/skip-counter",
    ParallelRequest: "POST /v1/replication/{name}/parallel",
    ReadOnlyRequest: "POST /v1/read-only",
    WaitRequest: "POST /v1/wait-for-position",
    RewindRequest: "POST /v1/rewind",
    CloneRequest: "POST /v1/clone",
    CloneChange: "PATCH /v1/clone",
}


# -- reading an answer ---------------------------------------------------------------------------------------------

#: What a type error says a value is not, by pydantic's error type.
_NOT = {
    "string_type": "a string",
    "bool_type": "a boolean",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}

#: Objects keyed by something other than field names, and how one of their entries is named (ending in ':', the
#: entry is a place of its own, as a list's item is).
KEYED = {"lag": "{field} of domain {key}", "tables": "table {key}:"}


def _place(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """Where a value is: the places it is in (`replication[0]: `) and its name there (`lag of domain '1'`)."""
    prefix, name, keyed = "", "", None
    for part in loc:
        if isinstance(part, int):
            prefix, name, keyed = f"{prefix}{name}[{part}]: ", "", None
        elif keyed is not None:
            entry = keyed.format(field=name, key=shown(part))
            if entry.endswith(":"):
                prefix, name = f"{prefix}{entry} ", ""
            else:
                name = entry
            keyed = None
        else:
            name = f"{name}.{part}" if name else part
            keyed = KEYED.get(part)
    return prefix, name


def reason(error: ErrorDetails) -> str:
    """One validation error in words, naming the field and where it is."""
    loc, kind = tuple(error["loc"]), error["type"]
    if kind == "missing" and loc:
        prefix, name = _place(loc[:-1])
        return f"{prefix}{name + ' ' if name else ''}lacks {loc[-1]!r}"
    prefix, name = _place(loc)
    if kind in _NOT:
        subject = name or ("" if prefix else "the document")
        return f"{prefix}{subject + ' ' if subject else ''}is {shown(error['input'])}, not {_NOT[kind]}"
    if kind == "value_error":
        return f"{prefix}{error.get('ctx', {}).get('error')}"
    if kind == "too_long":
        ctx = error.get("ctx", {})
        return f"{prefix}{name} holds {ctx.get('actual_length')} items, more than {ctx.get('max_length')}"
    return f"{prefix}{name or 'the document'}: {error['msg']}"


def read(model: type[_M], body: Any) -> _M:
    """`body` as `model`, or `AnswerInvalid` naming the first thing wrong with it."""
    try:
        return model.model_validate(body)
    except ValidationError as e:
        raise AnswerInvalid(reason(e.errors(include_url=False)[0])) from None


def domain_lags(lag: dict[str, DomainLag] | None) -> dict[int, base.DomainLag]:
    """A node's lag per domain (keyed by domain ids in text), for the driver interface."""
    found = {}
    for domain, value in (lag or {}).items():
        if not domain.isdigit():
            raise ValueError(f"lag names a domain {shown(domain)}, not a domain id")
        found[int(domain)] = base.DomainLag(transactions=value.transactions, seconds=value.seconds)
    return found


def each(items: list[_M] | None, key: str, convert: Callable[[_M], Any]) -> tuple[Any, ...]:
    """Each of a list of read items converted, a failure named by its place (`replication[0]: …`)."""
    converted = []
    for index, item in enumerate(items or ()):
        try:
            converted.append(convert(item))
        except (TypeError, ValueError) as e:
            raise AnswerInvalid(f"{key}[{index}]: {e}") from e
    return tuple(converted)
