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
from typing import Any, ClassVar, Literal

from ferry_control.core.config import Settings
from ferry_control.core.gtid import position
from ferry_control.core.untrusted_text import bounded
from ferry_control.drivers import fencing
from ferry_control.drivers import ferry_admin as admin
from ferry_control.drivers.base import (
    SEMI_SYNC_FALLEN_BACK,
    BinlogTransaction,
    ChangeConsumers,
    ChangeMaster,
    Checksums,
    ConnectedReplica,
    ConnectionSettings,
    CopyProgress,
    CopyThrottle,
    EventsPage,
    ParallelApplyChange,
    ParallelApplyLimits,
    Positions,
    RebuildSource,
    ReplicaConnection,
    ReplicationError,
    RewindOutcome,
    ServerDriver,
    ServerStatus,
    Skipped,
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
from ferry_control.drivers.ferry_admin import INT64_MAX, shown
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
from ferry_control.drivers.node_http import AnswerTooLarge, NodeAnswer, NodeHttp, NodeTimeout, NodeTransportError

#: The longest error code of a node's refusal kept (a node's codes are short names).
CODE_MAX = 64
#: The header a state-changing admin request carries the fencing token of the operation it is sent for in.
FENCE_HEADER = "X-Ferry-Fence"
#: The replication filters a ferryd connection has (change-master's lists of domain ids), by their names in
#: `ConnectionSettings.filters`, the same as MariaDB's.
DOMAIN_FILTERS = ("do_domain_ids", "ignore_domain_ids")


#: A rewind archive's name as ferryd gives it (no path: the download names nothing else).
ARCHIVE_NAME = re.compile(r"rewind-[A-Za-z0-9.-]{1,115}\.bin")

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


#: How long a rewind may take beyond the read timeout (it archives, then puts the store back, maybe by replaying
#: the kept binlog into it).
REWIND_EXTRA_TIMEOUT_S = 300.0

#: How often a clone's progress is read (the contract: at least once a second; the node is asked twice as often).
CLONE_POLL_S = 0.25

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
    #: ferryd's clone resumes from the donor's retained snapshot (docs/node-api.md, /v1/clone).
    rebuild_resumes: ClassVar[bool] = True
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

    async def _answer(
        self,
        method: str,
        path: str,
        *,
        bytes_max: int,
        too_large: Callable[[AnswerTooLarge], DriverError],
        json: Any = None,
        params: dict[str, Any] | None = None,
        extra_timeout_s: float = 0.0,
    ) -> NodeAnswer:
        """One admin API request with the node token, its answer as sent: no token, no answer in time, or one over
        `bytes_max` bytes (`too_large` says which error) is a DriverError."""
        token = self._token()
        if not token:
            raise DriverError(
                self.address,
                "no_node_token",
                "no admin token for the nodes: set FERRY_NODE_TOKEN, FERRY_NODE_TOKEN_FILE or the cluster's node_token",
                kind=ErrorKind.not_configured,
            )
        headers = {"Authorization": f"Bearer {token}"}
        acting = fencing.current()
        fence = None if method == "GET" or acting is None else acting.header()
        if fence is not None:  # the node refuses it once it has seen a newer token of the cluster (`stale_fence`)
            headers[FENCE_HEADER] = fence
        try:
            return await self._http.request(
                method, self._url(path), headers=headers, json=json, params=params,
                connect_timeout_s=self._config.connect_timeout_s,
                read_timeout_s=self._config.read_timeout_s + extra_timeout_s, bytes_max=bytes_max,
            )  # fmt: skip
        except AnswerTooLarge as e:
            raise too_large(e) from e
        except NodeTimeout as e:
            raise ServerUnreachable(self.address, "timeout", f"{method} {path} timed out ({e})") from e
        except NodeTransportError as e:
            raise ServerUnreachable(self.address, "unreachable", f"{method} {path}: {e}") from e

    def _refused(self, status: int, body: Any, not_a_node_error: str, no_message: str = "") -> DriverError:
        """An answer of 400 or more: the node's error code and message, bounded; anything else it answered is not
        quoted (it may be any server's page, and the reason is stored and shown) — `not_a_node_error` says so."""
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            error = {"message": not_a_node_error}
        code = bounded(str(error.get("code", "unknown")), CODE_MAX)
        message = bounded(str(error.get("message", ""))) or no_message
        if status == 409 and code == fencing.STALE_FENCE:
            return fencing.stale(self.address, message)
        return refusal(self.address, refusal_kind(status), code, message)

    async def _send(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                    extra_timeout_s: float = 0.0) -> Any:  # fmt: skip
        limit = self._config.answer_bytes_max

        def too_large(e: AnswerTooLarge) -> DriverError:
            return ServerProtocolError(
                self.address,
                "answer_too_large",
                f"{method} {path} declares {e.declared} bytes (at most {limit} are read)"
                if e.declared is not None
                else f"{method} {path} answered more than {limit} bytes",
            )

        answer = await self._answer(
            method, path, bytes_max=limit, too_large=too_large, json=json, params=params,
            extra_timeout_s=extra_timeout_s,
        )  # fmt: skip
        try:
            body = json_module.loads(answer.content)
        except ValueError as e:
            raise ServerProtocolError(
                self.address, "not_json", f"{method} {path} answered {answer.status} without JSON"
            ) from e
        if answer.status >= 400:
            raise self._refused(answer.status, body, f"answered {answer.status} with JSON that is not a node error")
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
            status = admin.read(admin.Status, body)
            return ServerStatus(
                server_id=status.server_id,
                read_only=status.read_only,
                positions=Positions(
                    binlog=status.gtid_binlog_pos,
                    slave=status.gtid_slave_pos,
                    current=status.gtid_current_pos,
                    binlog_state=status.gtid_binlog_state,
                ),
                connections=admin.each(status.replication, "replication", _connection),
                replicas=tuple(_replica(r) for r in status.replicas or ()),
                failure=status.failed,
                default_domain=status.default_domain,
                binlog_files=tuple(f.name for f in status.binlog_files or ()),
                listen_address=status.listen,
                version=_version(status),
                replicas_may_be_ahead=status.replicas_may_be_ahead,
                warnings=status_warnings(status),
                consumers=consumers_in(status),
            )
        except (TypeError, ValueError) as e:
            raise ServerProtocolError(self.address, "bad_status", f"/v1/status: {e}") from e

    async def replica_connections(self) -> tuple[ReplicaConnection, ...]:
        body = await self._read("/v1/replication")
        try:
            return admin.each(admin.read(admin.Replication, body).connections, "connections", _connection)
        except (TypeError, ValueError) as e:
            raise ServerProtocolError(self.address, "bad_replication", f"/v1/replication: {e}") from e

    async def connected_replicas(self) -> tuple[ConnectedReplica, ...]:
        body = await self._read("/v1/replicas")
        try:
            return tuple(_replica(r) for r in admin.read(admin.Replicas, body).replicas)
        except (TypeError, ValueError) as e:
            raise ServerProtocolError(self.address, "bad_replicas", f"/v1/replicas: {e}") from e

    async def change_consumers(self) -> ChangeConsumers:
        body = await self._read("/v1/consumers")
        try:
            return change_consumers(admin.read(admin.Consumers, body))
        except (TypeError, ValueError) as e:
            raise ServerProtocolError(self.address, "bad_consumers", f"/v1/consumers: {e}") from e

    async def recent_events(self, limit: int, domain: int | None = None, before: int | None = None) -> EventsPage:
        params: dict[str, int] = {"limit": limit}
        if domain is not None:
            params["domain"] = domain
        if before is not None:
            params["before"] = before
        body = await self._read("/v1/binlog/events", params)
        try:
            page = admin.read(admin.Events, body)
            events = admin.each(page.events, "events", _event)
            if len(events) > limit:
                raise ValueError(f"answered {len(events)} events where at most {limit} were asked")
            return EventsPage(transactions=events, next_before=page.next_before)
        except (TypeError, ValueError) as e:
            raise ServerProtocolError(self.address, "bad_events", f"/v1/binlog/events: {e}") from e

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
            sums = admin.read(admin.Checksums, body)
        except ValueError as e:
            raise ServerProtocolError(self.address, "bad_checksums", f"/v1/checksums: {e}") from e
        tables = {name: TableChecksum(rows=t.rows, checksum=t.checksum) for name, t in sums.tables.items()}
        return Checksums(position=sums.position, tables=tables)

    # -- changes (never retried) -----------------------------------------------------------------------------

    async def change_master(self, connection: str, change: ChangeMaster) -> None:
        settings = change.settings or ConnectionSettings(
            delay_s=change.delay_s, ignore_duplicates=change.ignore_duplicates, heartbeat_ms=change.heartbeat_ms
        )
        unknown = sorted(set(settings.filters) - set(DOMAIN_FILTERS))
        if unknown:
            raise DriverError(
                self.address,
                "filters_unsupported",
                f"ferryd connections filter by domain only ({', '.join(DOMAIN_FILTERS)}), not by {', '.join(unknown)}",
                kind=ErrorKind.unsupported,
            )
        filters: dict[str, list[int] | None] = {}
        for name in DOMAIN_FILTERS:
            try:
                filters[name] = list(settings.filter_ids(name)) or None
            except ValueError:
                text = settings.filters.get(name, "").replace(" ", "")
                raise DriverError(
                    self.address, "bad_filter", f"{name} must list domain ids, not {text!r}", kind=ErrorKind.bad_request
                ) from None
        request = admin.ChangeMasterRequest(
            master=change.master_address,
            use_gtid=change.use_gtid,
            ignore_duplicates=settings.ignore_duplicates,
            delay_s=settings.delay_s,
            position=change.position,
            file=change.file,
            offset=change.offset if change.file is not None else None,
            heartbeat_ms=settings.heartbeat_ms,
            parallel_mode=settings.parallel_mode,
            workers=settings.workers,
            domain_workers_max=settings.domain_workers_max,
            do_domain_ids=filters["do_domain_ids"],
            ignore_domain_ids=filters["ignore_domain_ids"],
        )
        body = request.body()
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
        body = admin.ParallelRequest(mode=mode, workers=workers, domain_workers_max=domain_workers_max).body()
        await self._send("POST", f"/v1/replication/{connection}/parallel", json=body)
        return ParallelApplyChange(before=before, after=await self._connection_settings_of(connection))

    async def _connection_settings_of(self, connection: str) -> ConnectionSettings:
        found = next((c for c in await self.replica_connections() if c.name == connection), None)
        if found is None:
            raise refusal(self.address, ErrorKind.not_found, "not_found", f"no replication connection {connection!r}")
        assert found.settings is not None  # ferryd reports every connection's settings
        return found.settings

    async def start_replication(self, connection: str, until: str | None = None) -> None:
        await self._send("POST", f"/v1/replication/{connection}/start", json=admin.StartRequest(until=until).body())

    async def stop_replication(self, connection: str) -> None:
        await self._send("POST", f"/v1/replication/{connection}/stop")

    async def skip_transactions(self, connection: str, count: int) -> Skipped:
        """The node's skip counter: its next start passes over `count` transactions (which ones, the node does not
        say). A conflict (`conflict`) while it runs or when its start position has several domains; not found for no
        such connection."""
        body = admin.SkipCounterRequest(count=int(count)).body()
        await self._send("POST", f"/v1/replication/{connection}/skip-counter", json=body)
        return Skipped(gtids=None, pending=count > 0)

    async def remove_replication(self, connection: str) -> None:
        await self._send("DELETE", f"/v1/replication/{connection}")

    async def set_read_only(self, read_only: bool, *, confirm: bool = True) -> bool:
        # The node answers with the flag in force: confirming costs nothing more.
        body = await self._send("POST", "/v1/read-only", json=admin.ReadOnlyRequest(read_only=read_only).body())
        try:
            return admin.read(admin.ReadOnly, body).read_only
        except ValueError as e:
            raise ServerProtocolError(self.address, "bad_read_only", f"/v1/read-only: {e}") from e

    async def wait_commits_landed(self, timeout_s: float) -> WritesStopped:
        # The node answers once its commits in flight have their answers, or 409 `commits_in_flight` after the wait.
        body = await self._send(
            "POST",
            "/v1/read-only",
            json=admin.ReadOnlyRequest(read_only=True, wait_for_in_flight_ms=int(timeout_s * 1000)).body(),
            extra_timeout_s=timeout_s,
        )
        try:
            stopped = admin.read(admin.WritesStopped, body)
            return WritesStopped(
                position=_position_text("gtid_binlog_pos", stopped.gtid_binlog_pos),
                in_flight_at_read_only=stopped.in_flight_at_read_only,
                waited_s=_milliseconds("waited_ms", stopped.waited_ms) / 1000,
            )
        except ValueError as e:
            raise ServerProtocolError(self.address, "bad_read_only", f"/v1/read-only with a wait: {e}") from e

    async def raise_fence(self) -> bool:
        acting = fencing.current()
        if acting is None or acting.header() is None:
            return False
        await self._send("POST", "/v1/fence")  # the node records the header's token (or refuses it: `stale_fence`)
        return True

    async def wait_for_position(self, position: str, timeout_s: float) -> WaitResult:
        # Not a change, but a long call: sent once, with the wait added to the read timeout.
        body = await self._send(
            "POST",
            "/v1/wait-for-position",
            json=admin.WaitRequest(position=position, timeout_ms=int(timeout_s * 1000)).body(),
            extra_timeout_s=timeout_s,
        )
        try:
            waited = admin.read(admin.Waited, body)
            return WaitResult(reached=waited.reached, position=_position_text("position", waited.position))
        except ValueError as e:
            raise ServerProtocolError(self.address, "bad_wait", f"/v1/wait-for-position: {e}") from e

    async def rewind(self, to: str, dry_run: bool) -> RewindOutcome:
        """The node's `POST /v1/rewind` (docs/node-api.md): sent once; its refusals (`not_quiesced`,
        `replication_running`, `replicas_connected`, `consumers_connected`, `cannot_rewind`) keep the node's code and
        message."""
        body = await self._send(
            "POST", "/v1/rewind", json=admin.RewindRequest(to=to, dry_run=dry_run).body(),
            extra_timeout_s=REWIND_EXTRA_TIMEOUT_S,
        )  # fmt: skip
        try:
            rewound = admin.read(admin.Rewound, body)
            cut = admin.each(rewound.cut, "cut", _cut)
            if rewound.dry_run != dry_run:
                raise ValueError(f"dry_run is {shown(rewound.dry_run)} where {dry_run} was asked")
            if not dry_run and cut and rewound.archive is None:
                raise ValueError("archive is null although transactions were cut")
            return RewindOutcome(
                to=_position_text("to", rewound.to), dry_run=rewound.dry_run, cut=cut, archive=rewound.archive,
                binlog_state=rewound.gtid_binlog_state,
                slave_pos=_position_text("gtid_slave_pos", rewound.gtid_slave_pos),
            )  # fmt: skip
        except ValueError as e:
            raise ServerProtocolError(self.address, "bad_rewind", f"/v1/rewind: {e}") from e

    async def rebuild_from(
        self,
        source: RebuildSource,
        *,
        throttle: CopyThrottle,
        on_progress: Callable[[CopyProgress], None],
        resume: bool = False,
    ) -> CopyProgress:
        """The node's clone (`POST /v1/clone` with the donor's protocol address, docs/node-api.md): the node pulls the
        donor's consistent snapshot over the node protocol, verifies it and installs it; its progress is read every
        `CLONE_POLL_S` and reported, `throttle` changes are sent as they happen (`PATCH`). A cancellation of this call
        cancels the clone (`DELETE`) and is re-raised: the node stays marked `clone_incomplete`, read-only, replicating
        from nobody. A failed clone is a `DriverError` (`clone_failed`) with the node's message. Host access is not
        used: the copy goes over the nodes' own protocol."""
        donor = source.driver
        if not isinstance(donor, FerryDriver):
            raise DriverError(
                self.address, "rebuild_other_kind", f"a ferryd node is rebuilt from a ferryd node, not {donor.kind}",
                kind=ErrorKind.bad_request,
            )  # fmt: skip
        donor_address = donor.protocol_address or (await donor.status()).listen_address
        if not donor_address:
            raise DriverError(
                donor.address, "no_protocol_address", "the donor's protocol address is not known",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        asked = admin.CloneRequest(donor=donor_address, throttle_mb_s=throttle.mb_s, resume=resume)
        view = self._clone(admin.CloneStarted, await self._send("POST", "/v1/clone", json=asked.body()), "POST")
        clone_id = view.clone_id
        sent = (throttle.mb_s, False)
        try:
            while True:
                if (throttle.mb_s, throttle.paused) != sent:
                    change = admin.CloneChange(throttle_mb_s=throttle.mb_s, paused=throttle.paused)
                    self._clone(admin.CloneChanged, await self._send("PATCH", "/v1/clone", json=change.body()), "PATCH")
                    sent = (throttle.mb_s, throttle.paused)
                if view.clone_id != clone_id:
                    raise ServerProtocolError(
                        self.address, "bad_clone", f"/v1/clone: shows clone {shown(view.clone_id)}, not {clone_id}"
                    )
                progress = _copy_progress(view)
                on_progress(progress)
                if view.state == "done":
                    return progress
                if view.state in ("failed", "cancelled", "idle"):
                    raise DriverError(
                        self.address, f"clone_{view.state}",
                        view.error or f"the node's clone {clone_id} from {donor_address} ended {view.state}",
                        kind=ErrorKind.failed,
                    )  # fmt: skip
                await asyncio.sleep(CLONE_POLL_S)
                view = self._clone(admin.CloneView, await self._read("/v1/clone"), "GET")
        except asyncio.CancelledError:
            try:
                await asyncio.shield(self._send("DELETE", "/v1/clone"))
            except DriverError:
                pass  # it had ended already (no_clone_copying) or is being installed; the node says which
            raise

    def _clone(self, model: type[admin.CloneView], body: Any, method: str) -> admin.CloneView:
        """A clone answer read as `model` (any answer of the clone's routes is its view)."""
        try:
            view = admin.read(model, body)
            if view.state != "idle" and view.clone_id is None:
                raise ValueError(f"state {view.state} without a clone_id")
            if view.position is not None:
                _position_text("position", view.position)
            return view
        except ValueError as e:
            raise ServerProtocolError(self.address, "bad_clone", f"{method} /v1/clone: {e}") from e

    async def download_rewind_archive(self, name: str, bytes_max: int) -> bytes:
        """`GET /v1/rewind/archives/{name}`: the archive's bytes, at most `bytes_max` (else `archive_too_large`; the
        node itself answers at most 256 MiB)."""
        if not ARCHIVE_NAME.fullmatch(name):
            raise DriverError(
                self.address, "bad_archive_name", f"{shown(name)} is not a rewind archive's name",
                kind=ErrorKind.bad_request,
            )  # fmt: skip
        path = f"/v1/rewind/archives/{name}"

        def too_large(e: AnswerTooLarge) -> DriverError:
            size = f"{e.declared} bytes" if e.declared is not None else "more bytes"
            return DriverError(
                self.address, "archive_too_large", f"archive {name} is {size}, over the {bytes_max}-byte bound"
            )

        answer = await self._answer("GET", path, bytes_max=bytes_max, too_large=too_large)
        if answer.status >= 400:
            try:
                body = json_module.loads(answer.content)
            except ValueError:
                body = None
            fallback = f"GET {path}: {answer.status}"
            raise self._refused(answer.status, body, fallback, no_message=fallback)
        if len(answer.content) > bytes_max:
            raise DriverError(
                self.address, "archive_too_large",
                f"archive {name} is {len(answer.content)} bytes, over the {bytes_max}-byte bound",
            )  # fmt: skip
        return answer.content


def _milliseconds(key: str, value: float) -> float:
    """A duration field: a finite number of milliseconds, not negative, at most a day."""
    if not 0 <= value <= 86_400_000:
        raise ValueError(f"{key} is {shown(value)}, not a duration in milliseconds")
    return value


def _position_text(key: str, text: str) -> str:
    """A GTID position field: a string that parses, every seq_no within BIGINT (what the control plane stores)."""
    if any(gtid.seq > INT64_MAX for gtid in position(text)):
        raise ValueError(f"{key} {shown(text)} has a seq_no beyond {INT64_MAX}")
    return text


def _copy_progress(view: admin.CloneView) -> CopyProgress:
    """A clone's view as the driver contract reports a copy's progress."""
    if view.state == "done":
        phase: Literal["starting", "copying", "done"] = "done"
    elif view.bytes_total is None:
        phase = "starting"
    else:
        phase = "copying"
    return CopyProgress(
        phase=phase, bytes_done=view.bytes_done, bytes_total=view.bytes_total, rate_bytes_s=view.rate_bytes_s,
        paused=view.paused, position=view.position, resumed_bytes=view.resumed_bytes,
    )  # fmt: skip


def _cut(t: admin.CutTransaction) -> BinlogTransaction:
    """One transaction a rewind cut (would cut)."""
    parts = t.gtid.split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"gtid {shown(t.gtid)} is not a GTID")
    domain, server_id, seq_no = (int(p) for p in parts)
    return BinlogTransaction(
        gtid=t.gtid, domain=domain, server_id=server_id, seq_no=seq_no, commit_id=None, commit_ts_us=t.commit_ts_us,
        file=t.file, offset=t.offset, tables=tuple(t.tables), rows=t.rows,
    )  # fmt: skip


def _event(e: admin.Event) -> BinlogTransaction:
    """One transaction of a node's binlog listing, its GTID agreeing with its parts."""
    if e.gtid != f"{e.domain}-{e.server_id}-{e.seq_no}":
        raise ValueError(f"gtid {shown(e.gtid)} is not {e.domain}-{e.server_id}-{e.seq_no}")
    return BinlogTransaction(
        gtid=e.gtid, domain=e.domain, server_id=e.server_id, seq_no=e.seq_no, commit_id=e.commit_id,
        commit_ts_us=e.commit_ts_us, file=e.file, offset=e.offset, tables=tuple(e.tables or ()), rows=e.rows,
    )  # fmt: skip


def status_warnings(body: admin.StatusWarnings | Mapping[str, Any]) -> tuple[str, ...]:
    """What a node's status says an operator should look at: semi-sync fallen back to asynchronous, binlog expiry
    holding a file back for a replica or failing."""
    if not isinstance(body, admin.StatusWarnings):
        body = admin.read(admin.StatusWarnings, body)
    found = []
    if body.semi_sync is not None and body.semi_sync.state == "fallen_back":
        found.append(SEMI_SYNC_FALLEN_BACK)
    expiry = body.binlog_expiry or admin.BinlogExpiry()
    if held := expiry.held_back:
        found.append(
            f"binlog expiry keeps {held.file} (and what follows) for replica {held.replica}, "
            "which still reads it: the binlog grows until that replica moves on"
        )
    if expiry.last_error:
        found.append(f"binlog expiry failed: {expiry.last_error}")
    return tuple(found)


def _version(status: admin.Status) -> str | None:
    """ferryd's version where the node reports one, else the admin API version it speaks."""
    if status.version:
        return f"ferryd {status.version}"
    return f"ferryd (admin API v{status.api_version})" if status.api_version is not None else None


def _connection(c: admin.Connection) -> ReplicaConnection:
    error = c.last_error
    return ReplicaConnection(
        name=c.name,
        master_address=c.master,
        running=c.running,
        io_state=c.io_state,
        sql_state=c.sql_state,
        received_position=c.received_position,
        applied_position=c.applied_position,
        master_position=c.master_position,
        lag=admin.domain_lags(c.lag),
        last_error=None
        if error is None
        else ReplicationError(
            side=error.side, code=error.code, message=error.message, at_us=error.at_us, gtid=failing_gtid(error)
        ),  # fmt: skip
        until=c.until,
        delay_s=c.delay_s or 0,
        waiting_for_relay_space=c.waiting_for_relay_space is True,
        settings=_connection_settings(c),
        skip_counter=c.skip_counter or 0,
    )


def failing_gtid(error: admin.ReplError) -> str | None:
    """The GTID of the transaction a node's SQL error is about: its `gtid` where the node reports one, else the one
    its applier's message starts with (`applying 1-1-3: …`)."""
    if error.side != "sql":
        return None
    if error.gtid is not None:
        return error.gtid
    named = FAILING_GTID.match(error.message)
    return named.group(1) if named else None


def _connection_settings(c: admin.Connection) -> ConnectionSettings:
    """What ferryd reports of a connection's settings: delay, duplicates, heartbeat interval, parallel apply, domain
    filters (as text, "1,3", like MariaDB's). It has no per-connection semi-sync role (a replica always
    acknowledges)."""
    parallel = c.parallel or admin.Parallel()
    filters = {"do_domain_ids": c.do_domain_ids, "ignore_domain_ids": c.ignore_domain_ids}
    return ConnectionSettings(
        heartbeat_ms=c.heartbeat_ms,
        filters={name: ",".join(str(d) for d in ids) for name, ids in filters.items() if ids},
        delay_s=c.delay_s or 0,
        ignore_duplicates=c.ignore_duplicates,
        parallel_mode=parallel.mode,
        workers=parallel.workers,
        domain_workers_max=parallel.domain_workers_max,
    )


def _replica(r: admin.Replica) -> ConnectedReplica:
    host = r.address.rsplit(":", 1)[0].strip("[]")
    return ConnectedReplica(
        server_id=r.server_id,
        address=r.address,
        host=host,
        sent_position=r.sent_position,
        listen_address=r.listen,
        admin_address=r.admin,
    )
