"""A small asyncio client for a ferryd node's binary protocol (docs/protocol.md): what drills need to write
canaries and read them back on every server — Transact (put, delete, increment), Get, WaitPosition and Ping — and
what a change consumer needs (Auth, Role, Subscribe and the stream's frames; ferry_subscription.py builds on them).

One connection answers requests in order; this client sends one request at a time (a lock), so it may be shared by
the tasks of one drill. Every wait is bounded by the client's timeout. Refusals raise `ProtocolRefused` with the
node's code and message (`READ_ONLY`, `STRICT_MODE`, …); a broken connection raises `ProtocolConnectionError`.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import ferry_engine

if TYPE_CHECKING:
    from ferry_engine import DecodedTransaction

# The protocol's constants are ferry-core's own (engine/crates/ferry-core/src/protocol.rs, row.rs), exported by
# ferry_engine: nothing here is copied by hand.
PROTOCOL_VERSION = ferry_engine.PROTOCOL_VERSION
OP_HELLO = ferry_engine.OPCODES["HELLO"]
OP_TRANSACT = ferry_engine.OPCODES["TRANSACT"]
OP_GET = ferry_engine.OPCODES["GET"]
OP_WAIT_POSITION = ferry_engine.OPCODES["WAIT_POSITION"]
OP_PING = ferry_engine.OPCODES["PING"]
OP_AUTH = ferry_engine.OPCODES["AUTH"]
OP_ROLE = ferry_engine.OPCODES["ROLE"]
OP_SUBSCRIBE = ferry_engine.OPCODES["SUBSCRIBE"]
R_HELLO = ferry_engine.OPCODES["R_HELLO"]
R_COMMITTED = ferry_engine.OPCODES["R_COMMITTED"]
R_ROW = ferry_engine.OPCODES["R_ROW"]
R_REACHED = ferry_engine.OPCODES["R_REACHED"]
R_PONG = ferry_engine.OPCODES["R_PONG"]
R_ERROR = ferry_engine.OPCODES["R_ERROR"]
R_AUTH_OK = ferry_engine.OPCODES["R_AUTH_OK"]
R_ROLE = ferry_engine.OPCODES["R_ROLE"]
R_SUBSCRIBED = ferry_engine.OPCODES["R_SUBSCRIBED"]
R_REPL_TXN = ferry_engine.OPCODES["R_REPL_TXN"]
R_HEARTBEAT = ferry_engine.OPCODES["R_HEARTBEAT"]
KIND_PUT = ferry_engine.ROW_OP_KINDS["PUT"]
KIND_DELETE = ferry_engine.ROW_OP_KINDS["DELETE"]
KIND_INCREMENT = ferry_engine.ROW_OP_KINDS["INCREMENT"]
TYPE_INT = ferry_engine.VALUE_TYPES["INT"]
TYPE_TEXT = ferry_engine.VALUE_TYPES["TEXT"]
#: Largest response frame this client accepts (the node's own frame limit is 4 MiB by default).
FRAME_BYTES_MAX = 8 * 1024 * 1024

#: The node's error codes by number (docs/protocol.md, "Errors").
ERROR_NAMES: dict[int, str] = dict(ferry_engine.ERROR_CODES)

Row = Mapping[str, int | str]


class ProtocolError(Exception):
    """Talking to the node over its protocol failed."""


class ProtocolConnectionError(ProtocolError):
    """No connection, a closed connection or no answer in time: whether a transaction committed is unknown."""


class ProtocolRefused(ProtocolError):
    """The node answered with an Error frame; nothing of the request was done."""

    def __init__(self, code: int, message: str):
        self.code = code
        self.name = ERROR_NAMES.get(code, f"ERROR_{code}")
        self.message = message
        super().__init__(f"{self.name}: {message}")


def row_of(fields: Mapping[str, object]) -> Row:
    """A row the protocol can carry: every value an integer or a string (anything else is a programming error)."""
    row: dict[str, int | str] = {}
    for name, value in fields.items():
        if not isinstance(value, int | str):
            raise TypeError(f"field {name!r}: a row holds integers and strings, not {type(value).__name__}")
        row[name] = value
    return row


@dataclass(frozen=True)
class Put:
    table: str
    key: str
    row: Row


@dataclass(frozen=True)
class Delete:
    table: str
    key: str


@dataclass(frozen=True)
class Increment:
    table: str
    key: str
    field: str
    by: int = 1


Op = Put | Delete | Increment


@dataclass(frozen=True)
class Committed:
    domain: int
    server_id: int
    seq_no: int
    commit_id: int
    commit_ts_us: int

    @property
    def gtid(self) -> str:
        return f"{self.domain}-{self.server_id}-{self.seq_no}"


@dataclass(frozen=True)
class Role:
    """A node's answer to Role: the master of its domains is writable and replicates from nobody."""

    read_only: bool
    replicates: bool

    @property
    def is_master(self) -> bool:
        return not self.read_only and not self.replicates


@dataclass(frozen=True)
class StreamTxn:
    """One committed transaction of a subscription's stream: its events as in the node's binlog, ending at
    `end_offset` of `file` (checked and decoded by `ferry_engine.decode_transaction`)."""

    file: str
    end_offset: int
    events: bytes

    def decode(self) -> DecodedTransaction:
        """Its GTID and row images, each event's checksum and the transaction's shape checked by ferry-core;
        `ProtocolError` when the node sent something else than one whole transaction."""
        try:
            return ferry_engine.decode_transaction(self.file, self.end_offset, self.events)
        except ValueError as e:
            raise ProtocolError(str(e)) from e


@dataclass(frozen=True)
class StreamHeartbeat:
    """The node had nothing to send for a heartbeat interval; its binlog position then."""

    binlog_pos: str


# -- encoding --------------------------------------------------------------------------------------------------


def _str(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<I", len(data)) + data


def _opt(fmt: str, value: int | None) -> bytes:
    return b"\x00" if value is None else b"\x01" + struct.pack(fmt, value)


def _row(row: Row) -> bytes:
    out = struct.pack("<I", len(row))
    for name, value in sorted(row.items()):  # the node wants fields sorted by name
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise TypeError(f"field {name!r}: only integers and text are stored, not {type(value).__name__}")
        out += _str(name)
        out += (
            bytes([TYPE_INT]) + struct.pack("<q", value) if isinstance(value, int) else bytes([TYPE_TEXT]) + _str(value)
        )
    return out


def _op(op: Op) -> bytes:
    if isinstance(op, Put):
        return bytes([KIND_PUT]) + _str(op.table) + _str(op.key) + _row(op.row)
    if isinstance(op, Delete):
        return bytes([KIND_DELETE]) + _str(op.table) + _str(op.key)
    return bytes([KIND_INCREMENT]) + _str(op.table) + _str(op.key) + _str(op.field) + struct.pack("<q", op.by)


def encode_frame(opcode: int, request_id: int, body: bytes) -> bytes:
    frame = struct.pack("<BBI", PROTOCOL_VERSION, opcode, request_id) + body
    return struct.pack("<I", len(frame)) + frame


def subscribe_body(name: str, position: str | None, heartbeat_ms: int, domains: Sequence[int]) -> bytes:
    """A Subscribe body: the consumer's name, where to start (None: from now), heartbeats, the domains (none: all)."""
    head = _str(name) + (b"\x00" if position is None else b"\x01" + _str(position))
    return head + struct.pack("<II", heartbeat_ms, len(domains)) + b"".join(struct.pack("<I", d) for d in domains)


def transact_body(ops: Sequence[Op], domain: int | None = None) -> bytes:
    """A Transact body: the domain, no explicit server_id or seq_no, the operations."""
    head = _opt("<I", domain) + _opt("<I", None) + _opt("<Q", None) + struct.pack("<I", len(ops))
    return head + b"".join(_op(op) for op in ops)


# -- decoding --------------------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values

    def blob(self) -> bytes:
        (length,) = self.take("<I")
        value = self.data[self.at : self.at + length]
        if len(value) != length:
            raise struct.error(f"{length} bytes announced, {len(value)} left")
        self.at += length
        return value

    def text(self) -> str:
        return self.blob().decode()


def _decode_row(reader: _Reader) -> dict[str, int | str]:
    (count,) = reader.take("<I")
    row: dict[str, int | str] = {}
    for _ in range(count):
        name = reader.text()
        (kind,) = reader.take("<B")
        row[name] = reader.take("<q")[0] if kind == TYPE_INT else reader.text()
    return row


class FerryProtocolClient:
    """One connection to a node's `--listen` address. Use `await FerryProtocolClient.connect(...)`, then `close()`
    (or `async with`)."""

    def __init__(self, address: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout_s: float):
        self.address = address
        self._reader = reader
        self._writer = writer
        self._timeout_s = timeout_s
        self._request_id = 0
        self._lock = asyncio.Lock()
        #: The request id of this connection's subscription, once it is one.
        self._stream_id = -1

    @classmethod
    async def connect(cls, address: str, timeout_s: float = 5.0) -> FerryProtocolClient:
        host, _, port = address.rpartition(":")
        try:
            async with asyncio.timeout(timeout_s):
                reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
        except (OSError, TimeoutError, ValueError) as e:
            raise ProtocolConnectionError(f"{address}: cannot connect: {e!r}") from e
        return cls(address, reader, writer, timeout_s)

    async def __aenter__(self) -> FerryProtocolClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass

    async def _call(self, opcode: int, body: bytes, extra_timeout_s: float = 0.0) -> tuple[int, bytes]:
        async with self._lock:
            self._request_id += 1
            request_id = self._request_id
            try:
                self._writer.write(encode_frame(opcode, request_id, body))
                await self._writer.drain()
            except OSError as e:
                raise ProtocolConnectionError(f"{self.address}: {type(e).__name__}: {e}") from e
            return await self._read(request_id, self._timeout_s + extra_timeout_s)

    async def _read(self, request_id: int, timeout_s: float) -> tuple[int, bytes]:
        """The next frame, which must answer `request_id` (or 0: the node's own); an Error frame raises."""
        try:
            async with asyncio.timeout(timeout_s):
                (length,) = struct.unpack("<I", await self._reader.readexactly(4))
                if length > FRAME_BYTES_MAX:
                    raise ProtocolError(f"{self.address}: a {length}-byte response frame is over the limit")
                frame = await self._reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as e:
            raise ProtocolConnectionError(f"{self.address}: {type(e).__name__}: {e}") from e
        if length < 6:
            raise ProtocolError(f"{self.address}: a {length}-byte frame is shorter than its header")
        version, response, answered = struct.unpack_from("<BBI", frame)
        if version != PROTOCOL_VERSION or answered not in (request_id, 0):
            raise ProtocolError(f"{self.address}: answer of version {version} for request {answered}, not {request_id}")
        payload = frame[6:]
        if response == R_ERROR:
            reader = _Reader(payload)
            (code,) = reader.take("<H")
            raise ProtocolRefused(code, reader.text())
        return response, payload

    async def transact(self, ops: Sequence[Op], domain: int | None = None) -> Committed:
        """Commits the operations atomically in `domain` (the node's default when None)."""
        response, payload = await self._call(OP_TRANSACT, transact_body(ops, domain))
        if response != R_COMMITTED:
            raise ProtocolError(f"{self.address}: Transact answered with opcode {response:#x}")
        return Committed(*struct.unpack("<IIQQQ", payload))

    async def get(self, table: str, key: str) -> dict[str, int | str] | None:
        response, payload = await self._call(OP_GET, _str(table) + _str(key))
        if response != R_ROW:
            raise ProtocolError(f"{self.address}: Get answered with opcode {response:#x}")
        reader = _Reader(payload)
        (present,) = reader.take("<B")
        return _decode_row(reader) if present else None

    async def wait_position(self, position: str, timeout_s: float) -> str:
        """Waits until the node has reached `position`; returns its position then (TIMEOUT refusal otherwise)."""
        body = _str(position) + struct.pack("<Q", int(timeout_s * 1000))
        response, payload = await self._call(OP_WAIT_POSITION, body, extra_timeout_s=timeout_s)
        if response != R_REACHED:
            raise ProtocolError(f"{self.address}: WaitPosition answered with opcode {response:#x}")
        return _Reader(payload).text()

    async def ping(self) -> None:
        response, _ = await self._call(OP_PING, b"")
        if response != R_PONG:
            raise ProtocolError(f"{self.address}: Ping answered with opcode {response:#x}")

    async def auth(self, token: str) -> None:
        """Presents a token: the admin token, or the consumer token (`--consumer-token-file`: reads and subscribes)."""
        response, _ = await self._call(OP_AUTH, _str(token))
        if response != R_AUTH_OK:
            raise ProtocolError(f"{self.address}: Auth answered with opcode {response:#x}")

    async def role(self) -> Role:
        response, payload = await self._call(OP_ROLE, b"")
        if response != R_ROLE:
            raise ProtocolError(f"{self.address}: Role answered with opcode {response:#x}")
        read_only, replicates = struct.unpack("<BB", payload)
        return Role(read_only=bool(read_only), replicates=bool(replicates))

    async def subscribe(self, name: str, position: str | None, heartbeat_ms: int, domains: Sequence[int] = ()) -> str:
        """Turns this connection into a change stream (docs/protocol.md, "Change subscriptions"); returns the
        position the stream starts after. Read it with `read_stream` from then on, and nothing else."""
        response, payload = await self._call(OP_SUBSCRIBE, subscribe_body(name, position, heartbeat_ms, domains))
        if response != R_SUBSCRIBED:
            raise ProtocolError(f"{self.address}: Subscribe answered with opcode {response:#x}")
        self._stream_id = self._request_id
        return _Reader(payload).text()

    async def read_stream(self, silence_s: float) -> StreamTxn | StreamHeartbeat:
        """The stream's next frame; the node ending it (an error frame) raises `ProtocolRefused`, a node silent for
        `silence_s` or a closed connection `ProtocolConnectionError`."""
        response, payload = await self._read(self._stream_id, silence_s)
        reader = _Reader(payload)
        try:
            if response == R_REPL_TXN:
                file = reader.text()
                (end_offset,) = reader.take("<Q")
                return StreamTxn(file=file, end_offset=end_offset, events=reader.blob())
            if response == R_HEARTBEAT:
                return StreamHeartbeat(binlog_pos=reader.text())
        except (struct.error, UnicodeDecodeError) as e:
            raise ProtocolError(f"{self.address}: a malformed frame {response:#x} in the stream: {e}") from e
        raise ProtocolError(f"{self.address}: unexpected opcode {response:#x} in a change stream")
