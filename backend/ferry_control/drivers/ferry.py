"""The `ferry` driver: speaks a ferryd node's admin HTTP API (docs/node-api.md) through `node_http`.

Every call carries the nodes' admin token as a bearer token (ferryd serves nothing but liveness without it); reads
are retried (a bounded number of times, on no answer or a 5xx), mutating calls are sent once. The node's error body
`{"error": {"code", "message"}}` becomes a typed `ServerRefused` carrying both, of the kind its HTTP status says
(`KIND_OF_STATUS`): the status stays here, the rest of the control plane sees kinds.
"""

from __future__ import annotations

import asyncio
import json as json_module
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ferry_control.core.config import Settings
from ferry_control.core.gtid import position
from ferry_control.core.untrusted_text import bounded
from ferry_control.drivers.base import (
    SEMI_SYNC_FALLEN_BACK,
    BinlogTransaction,
    ChangeConsumers,
    ChangeMaster,
    Checksums,
    ConnectedReplica,
    ConnectionSettings,
    DomainLag,
    EventsPage,
    IoState,
    ParallelApplyChange,
    ParallelApplyLimits,
    Positions,
    ReplicaConnection,
    ReplicationError,
    ServerDriver,
    ServerStatus,
    Skipped,
    SqlState,
    TableChecksum,
    WaitResult,
    WritesStopped,
)
from ferry_control.drivers.errors import (
    DriverError,
    ErrorKind,
    ServerFailed,
    ServerProtocolError,
    ServerRefused,
    ServerUnreachable,
    WriteOutcomeUnknown,
    refusal,
)
from ferry_control.drivers.ferry_consumers import change_consumers, consumers_in
from ferry_control.drivers.ferry_protocol import (
    FerryProtocolClient,
    ProtocolConnectionError,
    ProtocolError,
    ProtocolRefused,
    Put,
    row_of,
)
from ferry_control.drivers.kinds import KindRules
from ferry_control.drivers.node_http import AnswerTooLarge, NodeHttp, NodeTimeout, NodeTransportError

_T = TypeVar("_T")

#: The longest error code of a node's refusal kept (a node's codes are short names).
CODE_MAX = 64
#: Bounds of what a node's binlog listing and checksums may hold (beyond them the answer is a protocol error).
UINT32_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
TABLES_PER_EVENT_MAX = 1024
TABLE_NAME_MAX = 300
CHECKSUM_TABLES_MAX = 100_000
#: The replication filters a ferryd connection has (change-master's lists of domain ids), by their names in
#: `ConnectionSettings.filters`, the same as MariaDB's.
DOMAIN_FILTERS = ("do_domain_ids", "ignore_domain_ids")


#: How a node's applier words an SQL error: `applying <gtid>: <why>`.
FAILING_GTID = re.compile(r"applying (\d+-\d+-\d+): ")

#: The kind of a node's refusal by its HTTP status (another 4xx: `refused`, a 5xx: `failed`).
KIND_OF_STATUS = {
    400: ErrorKind.bad_request,
    401: ErrorKind.unauthorized,
    403: ErrorKind.forbidden,
    404: ErrorKind.not_found,
    409: ErrorKind.conflict,
    429: ErrorKind.busy,
}


def refusal_kind(status: int) -> ErrorKind:
    """The kind of a node's refusal answered with HTTP `status`."""
    return KIND_OF_STATUS.get(status, ErrorKind.failed if status >= 500 else ErrorKind.refused)


#: ferryd refuses admin tokens shorter than this.
NODE_TOKEN_CHARS_MIN = 16


class FerryRules(KindRules):
    """ferryd nodes: their admin token is the cluster's node_token (at least NODE_TOKEN_CHARS_MIN characters), else
    the fleet's FERRY_NODE_TOKEN; their admin API is https only with node_tls_ca_file set."""

    kind = "ferry"
    fleet_credentials = True

    def secrets_refusal(self, secrets: Mapping[str, str | None]) -> str | None:
        token = secrets.get("node_token")
        if token is not None and len(token) < NODE_TOKEN_CHARS_MIN:
            return f"node_token: ferryd needs at least {NODE_TOKEN_CHARS_MIN} characters"
        return None

    def plaintext(self, settings: Settings | None, secrets: Mapping[str, object]) -> bool:
        return settings is None or settings.security.node_tls_ca_file is None


#: A node busy computing checksums for another caller is asked again this many times, this far apart.
CHECKSUM_BUSY_RETRIES = 40
CHECKSUM_BUSY_WAIT_S = 0.25


@dataclass(frozen=True)
class FerryDriverConfig:
    connect_timeout_s: float
    read_timeout_s: float
    read_retries_max: int
    retry_backoff_s: float
    #: "https" when the factory has a CA to verify the nodes against (node_tls_ca_file), else "http".
    scheme: str = "http"
    #: The table drills write their canary rows into (settings.drills.canary_table), and the bound on one request on
    #: a node's binary protocol (canaries travel by the protocol, as any client's writes).
    canary_table: str = "ferry_drill_canary"
    protocol_timeout_s: float = 5.0
    #: The largest answer read (settings.nodes.answer_bytes_max); a longer one is the node's protocol error.
    answer_bytes_max: int = 4 * 1024 * 1024


#: A ferryd connection's parallel apply (the node's WORKERS_MAX is 256; workers 1 applies serially).
FERRY_PARALLEL_LIMITS = ParallelApplyLimits(
    modes=("serial", "conservative", "optimistic"),
    parallel_modes=("conservative", "optimistic"),
    catch_up_mode="optimistic",
    workers_min=1,
    workers_max=256,
    domain_workers_min=1,
    server_wide_workers=False,
)


class FerryDriver(ServerDriver):
    """One ferryd node at `admin_address` (`host:port`), over the factory's shared HTTP client."""

    kind = "ferry"
    #: ferryd counts its client commits in flight and answers a read-only call once they have landed.
    counts_commits_in_flight = True
    parallel_apply_limits = FERRY_PARALLEL_LIMITS

    def __init__(
        self,
        http: NodeHttp,
        admin_address: str,
        token: Callable[[], str | None],
        config: FerryDriverConfig,
        protocol_address: str | None = None,
    ):
        self._http = http
        self.address = admin_address
        #: Where the node serves its binary protocol (canary writes and reads); None: as its status advertises it.
        self.protocol_address = protocol_address
        #: Read for every call: ferryd answers nothing but liveness without its admin token.
        self._token = token
        self._config = config

    # -- transport -------------------------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return f"{self._config.scheme}://{self.address}{path}"

    async def _send(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                    extra_timeout_s: float = 0.0) -> Any:  # fmt: skip
        token = self._token()
        if not token:
            raise DriverError(
                self.address,
                "no_node_token",
                "no admin token for the nodes: set FERRY_NODE_TOKEN, FERRY_NODE_TOKEN_FILE or the cluster's node_token",
                kind=ErrorKind.not_configured,
            )
        headers = {"Authorization": f"Bearer {token}"}
        limit = self._config.answer_bytes_max
        try:
            answer = await self._http.request(
                method, self._url(path), headers=headers, json=json, params=params,
                connect_timeout_s=self._config.connect_timeout_s,
                read_timeout_s=self._config.read_timeout_s + extra_timeout_s, bytes_max=limit,
            )  # fmt: skip
        except AnswerTooLarge as e:
            too_large = (
                f"{method} {path} declares {e.declared} bytes (at most {limit} are read)"
                if e.declared is not None
                else f"{method} {path} answered more than {limit} bytes"
            )
            raise ServerProtocolError(self.address, "answer_too_large", too_large) from e
        except NodeTimeout as e:
            raise ServerUnreachable(self.address, "timeout", f"{method} {path} timed out ({e})") from e
        except NodeTransportError as e:
            raise ServerUnreachable(self.address, "unreachable", f"{method} {path}: {e}") from e
        content = answer.content
        try:
            body = json_module.loads(content)
        except ValueError as e:
            raise ServerProtocolError(
                self.address, "not_json", f"{method} {path} answered {answer.status} without JSON"
            ) from e
        if answer.status >= 400:
            # The node's error code and message, bounded; anything else it answered is not quoted (it may be any
            # server's page, and the reason is stored and shown).
            error = body.get("error") if isinstance(body, dict) else None
            if not isinstance(error, dict):
                error = {"message": f"answered {answer.status} with JSON that is not a node error"}
            code = bounded(str(error.get("code", "unknown")), CODE_MAX)
            message = bounded(str(error.get("message", "")))
            raise refusal(self.address, refusal_kind(answer.status), code, message)
        return body

    async def _read(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET with bounded retries on no answer or a 5xx."""
        attempt = 0
        while True:
            try:
                return await self._send("GET", path, params=params)
            except (ServerUnreachable, ServerFailed):
                if attempt >= self._config.read_retries_max:
                    raise
                attempt += 1
                await asyncio.sleep(self._config.retry_backoff_s * attempt)

    # -- canaries (the node's binary protocol) ----------------------------------------------------------------

    async def _protocol(self) -> FerryProtocolClient:
        address = self.protocol_address or (await self.status()).listen_address
        if not address:
            raise DriverError(
                self.address, "no_protocol_address", "the node's protocol address is not known",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        try:
            return await FerryProtocolClient.connect(address, self._config.protocol_timeout_s)
        except ProtocolError as e:
            raise ServerUnreachable(address, "unreachable", f"protocol connection failed: {e}") from e

    async def write_canary(self, domain: int, key: str, fields: Mapping[str, object]) -> str:
        """A refusal (READ_ONLY on a read-only node, …) is a `ServerRefused` with the node's error name (a conflict
        for READ_ONLY, else a bad request): nothing was written. A connection that broke with the transaction sent is
        `WriteOutcomeUnknown`."""
        try:
            async with await self._protocol() as client:
                committed = await client.transact([Put(self._config.canary_table, key, row_of(fields))], domain=domain)
        except ProtocolRefused as e:
            kind = ErrorKind.conflict if e.name == "READ_ONLY" else ErrorKind.bad_request
            raise refusal(self.address, kind, e.name, e.message) from e
        except ProtocolConnectionError as e:
            raise WriteOutcomeUnknown(self.address, "canary_write_unknown", str(e)) from e
        except ProtocolError as e:
            raise DriverError(self.address, "canary_write_failed", str(e)) from e
        return committed.gtid

    async def read_canaries(self, keys: list[str]) -> dict[str, dict[str, object] | None]:
        found: dict[str, dict[str, object] | None] = {}
        try:
            async with await self._protocol() as client:
                for key in keys:
                    row = await client.get(self._config.canary_table, key)
                    found[key] = None if row is None else dict(row)
        except ProtocolError as e:
            raise DriverError(self.address, "canary_read_failed", str(e)) from e
        return found

    # -- reads -----------------------------------------------------------------------------------------------

    async def status(self) -> ServerStatus:
        body = await self._read("/v1/status")
        try:
            if not isinstance(body, dict):
                raise TypeError(f"the document is {_shown(body)}, not an object")
            return ServerStatus(
                server_id=int(body["server_id"]),
                read_only=_bool(body, "read_only"),
                positions=Positions(
                    binlog=_text(body, "gtid_binlog_pos"),
                    slave=_text(body, "gtid_slave_pos", ""),
                    current=_text(body, "gtid_current_pos"),
                    binlog_state=_text(body, "gtid_binlog_state", ""),
                ),
                connections=_items(body, "replication", _connection),
                replicas=_items(body, "replicas", _replica),
                failure=_optional_text(body, "failed"),
                default_domain=int(body.get("default_domain", 0)),
                binlog_files=_items(body, "binlog_files", lambda f: _text(f, "name")),
                listen_address=_optional_text(body, "listen"),
                version=_version(body),
                replicas_may_be_ahead=_optional_bool(body, "replicas_may_be_ahead"),
                warnings=status_warnings(body),
                consumers=consumers_in(body),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ServerProtocolError(self.address, "bad_status", f"/v1/status: {_reason(e)}") from e

    async def replica_connections(self) -> tuple[ReplicaConnection, ...]:
        body = await self._read("/v1/replication")
        try:
            return _items(body, "connections", _connection, required=True)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ServerProtocolError(self.address, "bad_replication", f"/v1/replication: {_reason(e)}") from e

    async def connected_replicas(self) -> tuple[ConnectedReplica, ...]:
        body = await self._read("/v1/replicas")
        try:
            return _items(body, "replicas", _replica, required=True)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ServerProtocolError(self.address, "bad_replicas", f"/v1/replicas: {_reason(e)}") from e

    async def change_consumers(self) -> ChangeConsumers:
        body = await self._read("/v1/consumers")
        try:
            return change_consumers(body)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ServerProtocolError(self.address, "bad_consumers", f"/v1/consumers: {_reason(e)}") from e

    async def recent_events(self, limit: int, domain: int | None = None, before: int | None = None) -> EventsPage:
        params: dict[str, Any] = {"limit": limit}
        if domain is not None:
            params["domain"] = domain
        if before is not None:
            params["before"] = before
        body = await self._read("/v1/binlog/events", params)
        try:
            events = _items(body, "events", _event, required=True)
            if len(events) > limit:
                raise ValueError(f"answered {len(events)} events where at most {limit} were asked")
            return EventsPage(transactions=events, next_before=_integer(body, "next_before", 0, INT64_MAX, True))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ServerProtocolError(self.address, "bad_events", f"/v1/binlog/events: {_reason(e)}") from e

    async def checksums(self) -> Checksums:
        """The node's table checksums at one position. A node computes one set at a time and answers another
        request meanwhile `busy` (429): that is waited out (CHECKSUM_BUSY_RETRIES times, CHECKSUM_BUSY_WAIT_S apart)."""
        attempt = 0
        while True:
            try:
                body = await self._read("/v1/checksums")
                break
            except ServerRefused as e:
                if e.kind is not ErrorKind.busy or e.code != "busy" or attempt >= CHECKSUM_BUSY_RETRIES:
                    raise
                attempt += 1
                await asyncio.sleep(CHECKSUM_BUSY_WAIT_S)
        try:
            return _checksums(body)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ServerProtocolError(self.address, "bad_checksums", f"/v1/checksums: {_reason(e)}") from e

    # -- changes (never retried) -----------------------------------------------------------------------------

    async def change_master(self, connection: str, change: ChangeMaster) -> None:
        settings = change.settings or ConnectionSettings(
            delay_s=change.delay_s, ignore_duplicates=change.ignore_duplicates, heartbeat_ms=change.heartbeat_ms
        )
        body: dict[str, Any] = {
            "master": change.master_address,
            "use_gtid": change.use_gtid,
            "ignore_duplicates": settings.ignore_duplicates,
            "delay_s": settings.delay_s,
        }
        if change.position is not None:
            body["position"] = change.position
        if change.file is not None:
            body["file"] = change.file
            body["offset"] = change.offset
        if settings.heartbeat_ms is not None:
            body["heartbeat_ms"] = settings.heartbeat_ms
        for key in ("parallel_mode", "workers", "domain_workers_max"):
            if getattr(settings, key) is not None:
                body[key] = getattr(settings, key)
        unknown = sorted(set(settings.filters) - set(DOMAIN_FILTERS))
        if unknown:
            raise DriverError(
                self.address,
                "filters_unsupported",
                f"ferryd connections filter by domain only ({', '.join(DOMAIN_FILTERS)}), not by {', '.join(unknown)}",
                kind=ErrorKind.unsupported,
            )
        for name in DOMAIN_FILTERS:
            try:
                ids = settings.filter_ids(name)
            except ValueError:
                text = settings.filters.get(name, "").replace(" ", "")
                raise DriverError(
                    self.address, "bad_filter", f"{name} must list domain ids, not {text!r}", kind=ErrorKind.bad_request
                ) from None
            if ids:
                body[name] = ids
        await self._send("POST", f"/v1/replication/{connection}/change-master", json=body)

    async def set_parallel_apply(
        self, connection: str | None, mode: str, workers: int, domain_workers_max: int
    ) -> ParallelApplyChange:
        """The node's `POST /v1/replication/{name}/parallel`: a running connection's SQL side takes the change
        between two commit groups (nothing in flight then), its IO side goes on; nothing is paused. A node has no
        server-wide workers (`connection` None: nothing to change)."""
        why = FERRY_PARALLEL_LIMITS.refusal(mode, workers, domain_workers_max)
        if why is not None:
            raise DriverError(self.address, "bad_parallel_apply", why, kind=ErrorKind.bad_request)
        if connection is None:
            return ParallelApplyChange(before=ConnectionSettings(), after=ConnectionSettings())
        before = await self._connection_settings_of(connection)
        wanted = (mode, workers, domain_workers_max)
        if (before.parallel_mode, before.workers, before.domain_workers_max) == wanted:
            return ParallelApplyChange(before=before, after=before)
        body = {"mode": mode, "workers": workers, "domain_workers_max": domain_workers_max}
        await self._send("POST", f"/v1/replication/{connection}/parallel", json=body)
        return ParallelApplyChange(before=before, after=await self._connection_settings_of(connection))

    async def _connection_settings_of(self, connection: str) -> ConnectionSettings:
        found = next((c for c in await self.replica_connections() if c.name == connection), None)
        if found is None:
            raise refusal(self.address, ErrorKind.not_found, "not_found", f"no replication connection {connection!r}")
        assert found.settings is not None  # ferryd reports every connection's settings
        return found.settings

    async def start_replication(self, connection: str, until: str | None = None) -> None:
        body = {} if until is None else {"until": until}
        await self._send("POST", f"/v1/replication/{connection}/start", json=body)

    async def stop_replication(self, connection: str) -> None:
        await self._send("POST", f"/v1/replication/{connection}/stop")

    async def skip_transactions(self, connection: str, count: int) -> Skipped:
        """The node's skip counter: its next start passes over `count` transactions (which ones, the node does not
        say). A conflict (`conflict`) while it runs or when its start position has several domains; not found for no
        such connection."""
        await self._send("POST", f"/v1/replication/{connection}/skip-counter", json={"count": int(count)})
        return Skipped(gtids=None, pending=count > 0)

    async def remove_replication(self, connection: str) -> None:
        await self._send("DELETE", f"/v1/replication/{connection}")

    async def set_read_only(self, read_only: bool, *, confirm: bool = True) -> bool:
        # The node answers with the flag in force: confirming costs nothing more.
        body = await self._send("POST", "/v1/read-only", json={"read_only": read_only})
        try:
            return _bool(_document(body), "read_only")
        except (KeyError, TypeError, ValueError) as e:
            raise ServerProtocolError(self.address, "bad_read_only", f"/v1/read-only: {_reason(e)}") from e

    async def wait_commits_landed(self, timeout_s: float) -> WritesStopped:
        # The node answers once its commits in flight have their answers, or 409 `commits_in_flight` after the wait.
        body = await self._send(
            "POST",
            "/v1/read-only",
            json={"read_only": True, "wait_for_in_flight_ms": int(timeout_s * 1000)},
            extra_timeout_s=timeout_s,
        )
        try:
            return WritesStopped(
                position=_position_text(_document(body), "gtid_binlog_pos"),
                in_flight_at_read_only=_required_integer(body, "in_flight_at_read_only", 0, INT64_MAX),
                waited_s=_milliseconds(body, "waited_ms") / 1000,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ServerProtocolError(
                self.address, "bad_read_only", f"/v1/read-only with a wait lacks or mistypes {e}"
            ) from e

    async def wait_for_position(self, position: str, timeout_s: float) -> WaitResult:
        # Not a change, but a long call: sent once, with the wait added to the read timeout.
        body = await self._send(
            "POST",
            "/v1/wait-for-position",
            json={"position": position, "timeout_ms": int(timeout_s * 1000)},
            extra_timeout_s=timeout_s,
        )
        try:
            return WaitResult(reached=_bool(_document(body), "reached"), position=_position_text(body, "position"))
        except (KeyError, TypeError, ValueError) as e:
            raise ServerProtocolError(self.address, "bad_wait", f"/v1/wait-for-position: {_reason(e)}") from e


def _shown(value: Any) -> str:
    """A value a node sent, as an error message quotes it (bounded: a hostile node may send megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _reason(e: BaseException) -> str:
    """What was wrong with a node's document, in words: a KeyError names the missing field."""
    if isinstance(e, KeyError):
        return f"lacks {e.args[0]!r}" if e.args else "lacks a field"
    return str(e)


def _document(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise TypeError(f"the document is {_shown(body)}, not an object")
    return body


def _milliseconds(body: dict[str, Any], key: str) -> float:
    """A duration field: a finite number of milliseconds, not negative, at most a day."""
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 86_400_000:
        raise ValueError(f"{key} is {_shown(value)}, not a duration in milliseconds")
    return float(value)


def _position_text(body: dict[str, Any], key: str) -> str:
    """A GTID position field: a string that parses, every seq_no within BIGINT (what the control plane stores)."""
    text = _text(body, key)
    if any(gtid.seq > INT64_MAX for gtid in position(text)):
        raise ValueError(f"{key} {_shown(text)} has a seq_no beyond {INT64_MAX}")
    return text


def _integer(body: dict[str, Any], key: str, low: int, high: int, optional: bool = False) -> int | None:
    """An integer field within low..high (None when absent and `optional`)."""
    value = body.get(key) if optional else body[key]
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{key} is {_shown(value)}, not an integer")
    if not low <= value <= high:
        raise ValueError(f"{key} {value} is outside {low}..{high}")
    return value


def _required_integer(body: dict[str, Any], key: str, low: int, high: int) -> int:
    value = _integer(body, key, low, high)
    assert value is not None
    return value


def _event(e: dict[str, Any]) -> BinlogTransaction:
    """One transaction of a node's binlog listing, every field checked (its GTID agreeing with its parts)."""
    domain = _required_integer(e, "domain", 0, UINT32_MAX)
    server_id = _required_integer(e, "server_id", 0, UINT32_MAX)
    seq_no = _required_integer(e, "seq_no", 0, INT64_MAX)
    gtid = _text(e, "gtid")
    if gtid != f"{domain}-{server_id}-{seq_no}":
        raise ValueError(f"gtid {_shown(gtid)} is not {domain}-{server_id}-{seq_no}")
    tables = e.get("tables") or []
    if not isinstance(tables, list) or len(tables) > TABLES_PER_EVENT_MAX:
        raise TypeError(f"tables is {_shown(tables)}, not a list of at most {TABLES_PER_EVENT_MAX} names")
    for table in tables:
        if not isinstance(table, str) or len(table) > TABLE_NAME_MAX:
            raise TypeError(f"a table name is {_shown(table)}, not a string of at most {TABLE_NAME_MAX} characters")
    file = _optional_text(e, "file")
    if file is not None and len(file) > TABLE_NAME_MAX:
        raise ValueError(f"file {_shown(file)} is longer than {TABLE_NAME_MAX} characters")
    return BinlogTransaction(
        gtid=gtid, domain=domain, server_id=server_id, seq_no=seq_no,
        commit_id=_integer(e, "commit_id", 0, INT64_MAX, True),
        commit_ts_us=_integer(e, "commit_ts_us", 0, INT64_MAX, True), file=file,
        offset=_integer(e, "offset", 0, INT64_MAX, True), tables=tuple(tables),
        rows=_integer(e, "rows", 0, INT64_MAX, True),
    )  # fmt: skip


def _checksums(body: Any) -> Checksums:
    """A node's checksums document, every field checked."""
    if not isinstance(body, dict):
        raise TypeError(f"the document is {_shown(body)}, not an object")
    tables = body["tables"]
    if not isinstance(tables, dict) or len(tables) > CHECKSUM_TABLES_MAX:
        raise TypeError(f"tables is {_shown(tables)}, not an object of at most {CHECKSUM_TABLES_MAX} tables")
    parsed = {}
    for name, table in tables.items():
        if len(name) > TABLE_NAME_MAX or not isinstance(table, dict):
            raise TypeError(f"table {_shown(name)}: is {_shown(table)}, not an object")
        rows = _required_integer(table, "rows", 0, INT64_MAX)
        parsed[name] = TableChecksum(rows=rows, checksum=_required_integer(table, "checksum", 0, UINT64_MAX))
    return Checksums(position=_text(body, "position"), tables=parsed)


def _items(body: Any, key: str, parse: Callable[[Any], _T], *, required: bool = False) -> tuple[_T, ...]:
    """A list of objects in a node's document, each parsed by `parse`; a malformed one is named by its place
    (`replication[0]: …`), so an operator knows which field the node got wrong."""
    if not isinstance(body, dict):
        raise TypeError(f"the document is {_shown(body)}, not an object")
    items = body[key] if required else body.get(key)
    if items is None:
        return ()
    if not isinstance(items, list):
        raise TypeError(f"{key} is {_shown(items)}, not a list")
    parsed = []
    for index, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise TypeError(f"is {_shown(item)}, not an object")
            parsed.append(parse(item))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"{key}[{index}]: {_reason(e)}") from e
    return tuple(parsed)


def _text(body: dict[str, Any], key: str, default: str | None = None) -> str:
    """A string field (`default` when absent and one is given; else it is required)."""
    value = body.get(key, default) if default is not None else body[key]
    if not isinstance(value, str):
        raise TypeError(f"{key} is {_shown(value)}, not a string")
    return value


def _optional_text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{key} is {_shown(value)}, not a string")
    return value


def _bool(body: dict[str, Any], key: str) -> bool:
    value = body[key]
    if not isinstance(value, bool):
        raise TypeError(f"{key} is {_shown(value)}, not a boolean")
    return value


def _object(body: dict[str, Any], key: str) -> dict[str, Any]:
    """An optional object field ({} when absent)."""
    value = body.get(key) or {}
    if not isinstance(value, dict):
        raise TypeError(f"{key} is {_shown(value)}, not an object")
    return value


def _optional_bool(body: dict[str, Any], key: str) -> bool | None:
    """A boolean the node may leave out (older nodes): None when absent; anything but a boolean is a protocol error."""
    value = body.get(key)
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{key} is {value!r}, not a boolean")
    return value


def status_warnings(body: dict[str, Any]) -> tuple[str, ...]:
    """What a node's status says an operator should look at: semi-sync fallen back to asynchronous, binlog expiry
    holding a file back for a replica or failing."""
    found = []
    if _object(body, "semi_sync").get("state") == "fallen_back":
        found.append(SEMI_SYNC_FALLEN_BACK)
    expiry = _object(body, "binlog_expiry")
    if held := _object(expiry, "held_back"):
        found.append(
            f"binlog expiry keeps {_text(held, 'file')} (and what follows) for replica {_text(held, 'replica')}, "
            "which still reads it: the binlog grows until that replica moves on"
        )
    if error := _optional_text(expiry, "last_error"):
        found.append(f"binlog expiry failed: {error}")
    return tuple(found)


def _version(body: dict[str, Any]) -> str | None:
    """ferryd's version where the node reports one, else the admin API version it speaks."""
    if body.get("version"):
        return f"ferryd {body['version']}"
    return f"ferryd (admin API v{body['api_version']})" if body.get("api_version") is not None else None


def _connection(c: dict[str, Any]) -> ReplicaConnection:
    error = _object(c, "last_error")
    lag = _object(c, "lag")
    return ReplicaConnection(
        name=_text(c, "name"),
        master_address=_text(c, "master"),
        running=_bool(c, "running"),
        io_state=IoState(c["io_state"]),
        sql_state=SqlState(c["sql_state"]),
        received_position=_text(c, "received_position", ""),
        applied_position=_text(c, "applied_position", ""),
        master_position=_text(c, "master_position", ""),
        lag={int(domain): _domain_lag(domain, v) for domain, v in lag.items()},
        last_error=None
        if not error
        else ReplicationError(
            side=_text(error, "side"),
            code=_text(error, "code"),
            message=_text(error, "message"),
            at_us=None if error.get("at_us") is None else int(error["at_us"]),
            gtid=failing_gtid(error),
        ),  # fmt: skip
        until=_optional_text(c, "until"),
        delay_s=int(c.get("delay_s") or 0),
        waiting_for_relay_space=c.get("waiting_for_relay_space") is True,
        settings=_connection_settings(c),
        skip_counter=int(c.get("skip_counter") or 0),
    )


def failing_gtid(error: dict[str, Any]) -> str | None:
    """The GTID of the transaction a node's SQL error is about: its `gtid` where the node reports one, else the one
    its applier's message starts with (`applying 1-1-3: …`)."""
    if error.get("side") != "sql":
        return None
    if isinstance(error.get("gtid"), str):
        return str(error["gtid"])
    named = FAILING_GTID.match(str(error.get("message") or ""))
    return named.group(1) if named else None


def _domain_lag(domain: str, value: Any) -> DomainLag:
    if not isinstance(value, dict):
        raise TypeError(f"lag of domain {_shown(domain)} is {_shown(value)}, not an object")
    return DomainLag(transactions=int(value["transactions"]), seconds=float(value["seconds"]))


def _connection_settings(c: dict[str, Any]) -> ConnectionSettings:
    """What ferryd reports of a connection's settings: delay, duplicates, heartbeat interval, parallel apply, domain
    filters (as text, "1,3", like MariaDB's). It has no per-connection semi-sync role (a replica always
    acknowledges)."""
    parallel = _object(c, "parallel")
    filters = {name: ",".join(str(int(d)) for d in c.get(name) or ()) for name in DOMAIN_FILTERS}
    return ConnectionSettings(
        heartbeat_ms=None if c.get("heartbeat_ms") is None else int(c["heartbeat_ms"]),
        filters={name: ids for name, ids in filters.items() if ids},
        delay_s=int(c.get("delay_s") or 0),
        ignore_duplicates=bool(c.get("ignore_duplicates", False)),
        parallel_mode=_optional_text(parallel, "mode"),
        workers=None if parallel.get("workers") is None else int(parallel["workers"]),
        domain_workers_max=None if parallel.get("domain_workers_max") is None else int(parallel["domain_workers_max"]),
    )


def _replica(r: dict[str, Any]) -> ConnectedReplica:
    address = _text(r, "address")
    host = address.rsplit(":", 1)[0].strip("[]")
    return ConnectedReplica(
        server_id=int(r["server_id"]),
        address=address,
        host=host,
        sent_position=_text(r, "sent_position", ""),
        listen_address=_optional_text(r, "listen"),
        admin_address=_optional_text(r, "admin"),
    )
