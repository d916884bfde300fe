"""Hostile servers for the collector's tests, on real loopback ports: a fake ferryd admin API whose status answer the
test chooses — a malformed, truncated, huge, slow or never-ending document (`FakeNode`, and `hostile_answers`, a
seeded generator of such answers) — and a fake MySQL-protocol server that answers garbage, a truncated or endless
greeting, or nothing (`FakeSqlServer`). The collector speaks to them exactly as it speaks to real servers. Only tests
of a lying server use them; every other test talks to real ferryd and mariadbd."""

from __future__ import annotations

import asyncio
import json
import random
import struct
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tests.helpers import serve


@dataclass
class Answer:
    """What the fake node answers to every request."""

    body: bytes = b"{}"
    status: int = 200
    #: Seconds before the answer starts (a slow server).
    delay_s: float = 0.0
    #: Sends the body's headers and then nothing more, never ending the response (a hung server).
    never_ends: bool = False
    #: Declares a longer body than it sends, then closes (a truncated answer).
    truncated: bool = False
    #: Streams this many bytes of JSON whitespace after `body` (a huge answer, sent in chunks: the fake itself
    #: holds no more than one chunk).
    padding_bytes: int = 0

    @classmethod
    def json(cls, document: Any, **options: Any) -> Answer:
        return cls(body=json.dumps(document).encode(), **options)


class FakeNode:
    """An ASGI app answering `answer` to every request; counts the requests it had and keeps the Authorization
    header of each (a server registered at an address someone made up must never be sent a credential)."""

    def __init__(self, answer: Answer | None = None):
        self.answer = answer or Answer()
        self.requests = 0
        self.authorizations: list[str] = []
        #: Requests being answered now, and the most at once; while `hold` is set to an unset event, every request
        #: waits for it before its answer (a server that answers only when the test lets it).
        self.in_flight = 0
        self.most_in_flight = 0
        self.hold: asyncio.Event | None = None
        #: Set by `stop`: slow and never-ending answers give up, so the server can shut down.
        self.stopped = asyncio.Event()

    def stop(self) -> None:
        self.stopped.set()

    async def _wait(self, seconds: float | None) -> bool:
        """Waits `seconds` (None: for ever) unless stopped first; True when stopped."""
        try:
            await asyncio.wait_for(self.stopped.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.requests += 1
        self.authorizations += [v.decode() for k, v in scope["headers"] if k.lower() == b"authorization"]
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.hold is not None:
                waits = [asyncio.ensure_future(self.hold.wait()), asyncio.ensure_future(self.stopped.wait())]
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for wait in waits:
                    wait.cancel()
            await self._answer(send)
        finally:
            self.in_flight -= 1

    async def _answer(self, send: Any) -> None:
        answer = self.answer
        if answer.delay_s and await self._wait(answer.delay_s):
            return
        length = len(answer.body) + (1000 if answer.truncated else 0)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(length).encode())]
        if answer.never_ends or answer.padding_bytes:
            headers = [(b"content-type", b"application/json")]
        if answer.padding_bytes:
            await send({"type": "http.response.start", "status": answer.status, "headers": headers})
            await send({"type": "http.response.body", "body": answer.body, "more_body": True})
            chunk = b" " * 65536
            for _ in range(answer.padding_bytes // len(chunk)):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        if answer.never_ends:
            await send({"type": "http.response.body", "body": answer.body[:10], "more_body": True})
            await self._wait(None)  # until stopped
            return
        await send({"type": "http.response.body", "body": answer.body, "more_body": answer.truncated})
        if answer.truncated:
            raise ConnectionAbortedError("the fake node closes a truncated answer")


@asynccontextmanager
async def serving(node: FakeNode) -> AsyncIterator[str]:
    """Serves `node` on a loopback port (yields its base URL); stops its pending answers before shutting down."""
    async with serve(node) as url:
        try:
            yield url
        finally:
            node.stop()


def valid_status(server_id: int = 9, **fields: Any) -> dict[str, Any]:
    """A well-formed ferryd status document of a master with no replicas, with `fields` replaced."""
    return {
        "server_id": server_id,
        "read_only": False,
        "gtid_binlog_pos": "1-9-5",
        "gtid_slave_pos": "",
        "gtid_current_pos": "1-9-5",
        "replication": [],
        "replicas": [],
        "default_domain": 1,
        **fields,
    }


def connection(**fields: Any) -> dict[str, Any]:
    """A well-formed replication connection of a status document, with `fields` replaced."""
    return {
        "name": "main",
        "master": "127.0.0.1:1",
        "running": True,
        "io_state": "connected",
        "sql_state": "waiting_for_relay",
        "received_position": "1-9-5",
        "applied_position": "1-9-5",
        "master_position": "1-9-5",
        "lag": {"1": {"transactions": 0, "seconds": 0.0}},
        **fields,
    }


def _random_value(rng: random.Random) -> Any:
    """A JSON value of any type and size a buggy or hostile server might put where something else belongs."""
    kind = rng.randrange(12)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([-1, 0, 2**31, 2**63, 2**64 + 1, -(2**70)])
    if kind == 3:
        return rng.choice([0.5, -1.5, 1e308, float("nan"), float("inf")])
    if kind == 4:
        return "".join(rng.choice("0123456789-,: abcxyz\u00e9\u2603\x00") for _ in range(rng.randrange(0, 40)))
    if kind == 5:
        return "9" * rng.choice([100, 10_000, 300_000])
    if kind == 6:
        return [_random_value(rng) for _ in range(rng.randrange(0, 4))] if rng.random() < 0.7 else []
    if kind == 7:
        return {rng.choice(["name", "master", "x", "1", ""]): _random_value(rng) for _ in range(rng.randrange(0, 3))}
    if kind == 8:
        nested: Any = "deep"
        for _ in range(rng.randrange(10, 200)):
            nested = [nested]
        return nested
    if kind == 9:
        return rng.choice(["1-1-1", "1-1-x", "1-2-3,1-2-4", "-1-1-1", "4294967296-1-1", "1-1-18446744073709551616"])
    if kind == 10:
        return [connection(name=rng.choice(["main", "", "n" * 70]), master=_random_value(rng))]
    return {"transactions": _random_value(rng), "seconds": _random_value(rng)}


def _mutated(rng: random.Random) -> dict[str, Any]:
    """A status document with one to three fields dropped or replaced, at the top or inside a connection."""
    document = valid_status(replication=[connection()], replicas=[{"server_id": 2, "address": "127.0.0.1:5"}])
    for _ in range(rng.randrange(1, 4)):
        target = document
        if rng.random() < 0.4:
            target = document["replication"][0] if isinstance(document.get("replication"), list) and document[
                "replication"] and isinstance(document["replication"][0], dict) else document  # fmt: skip
        if not target:
            break
        key = rng.choice(sorted(target))
        if rng.random() < 0.3:
            del target[key]
        else:
            target[key] = _random_value(rng)
    return document


def hostile_answers(seed: int, count: int) -> Iterator[tuple[str, Answer]]:
    """`count` hostile answers to a status poll, the same for the same seed: mostly mutated documents, and
    truncated bodies, bytes that are not JSON, error statuses, huge answers (streamed, past the driver's bound),
    and a few slow and never-ending ones (bounded by the poll's time-out)."""
    for index in range(count):
        rng = random.Random(seed * 1_000_003 + index)
        kind = rng.random()
        if kind < 0.70:
            document = _mutated(rng)
            yield f"{index}: mutated document", Answer(body=json.dumps(document).encode())
        elif kind < 0.78:
            body = json.dumps(valid_status()).encode()
            yield f"{index}: truncated", Answer(body=body[: rng.randrange(0, len(body))], truncated=True)
        elif kind < 0.85:
            yield f"{index}: not JSON", Answer(body=bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))))
        elif kind < 0.91:
            status = rng.choice([302, 400, 401, 404, 418, 500, 503])
            yield f"{index}: status {status}", Answer(body=json.dumps(_random_value(rng)).encode(), status=status)
        elif kind < 0.96:
            yield f"{index}: huge", Answer(body=b'{"server_id": 9, "pad": "', padding_bytes=rng.choice([5, 20]) << 20)
        elif kind < 0.98:
            yield f"{index}: slow", Answer(body=json.dumps(valid_status()).encode(), delay_s=30.0)
        else:
            yield f"{index}: never ends", Answer(body=json.dumps(valid_status()).encode(), never_ends=True)


def _packet(sequence: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([sequence]) + payload


def greeting(plugin: str, *, tls: bool = False) -> bytes:
    """A MariaDB-like protocol-10 greeting announcing `plugin` as the authentication method (TLS offered or not)."""
    capabilities = 0x1 | 0x200 | 0x8000 | 0x80000 | (0x800 if tls else 0)  # long password, 4.1, secure, plugin auth
    payload = (
        b"\x0a5.5.5-10.11.6-MariaDB-fake\x00"
        + struct.pack("<I", 7)
        + b"abcdefgh\x00"
        + struct.pack("<H", capabilities & 0xFFFF)
        + b"\x2d"
        + struct.pack("<H", 2)
        + struct.pack("<H", capabilities >> 16)
        + bytes([21])
        + b"\x00" * 10
        + b"ijklmnopqrst\x00"
        + plugin.encode()
        + b"\x00"
    )
    return _packet(0, payload)


class FakeSqlServer:
    """A TCP server on loopback that a MySQL client connects to and that answers `mode`: `garbage` (random bytes,
    then close), `silent` (accepts, never speaks), `truncated` (a greeting packet's header promising more than it
    sends, then close), `endless` (a header promising 16 MiB, then a trickle), `close` (closes at once),
    `clear_text` (a greeting asking for mysql_clear_password), `switch_to_clear` (a greeting asking for the native
    scramble, then an authentication switch to mysql_clear_password), `no_tls` (a native greeting without TLS
    offered). What clients sent is kept in `received`."""

    MODES = ("garbage", "silent", "truncated", "endless", "close", "clear_text", "switch_to_clear", "no_tls")

    def __init__(self, mode: str, seed: int = 0):
        assert mode in self.MODES, mode
        self.mode = mode
        self.rng = random.Random(seed)
        self.server: asyncio.Server | None = None
        self.port = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self.received = bytearray()

    async def __aenter__(self) -> FakeSqlServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self._writers):
            writer.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            if self.mode == "garbage":
                writer.write(bytes(self.rng.randrange(256) for _ in range(64)))
            elif self.mode == "truncated":
                writer.write(struct.pack("<I", 100)[:3] + b"\x00" + b"\x0a5.5.5-x")
            elif self.mode == "endless":
                writer.write(struct.pack("<I", 0xFFFFFF)[:3] + b"\x00")
                for _ in range(1000):
                    writer.write(b"\x00" * 16)
                    await writer.drain()
                    await asyncio.sleep(0.01)
            elif self.mode == "silent":
                await reader.read()  # until the client gives up
            elif self.mode in ("clear_text", "switch_to_clear", "no_tls"):
                plugin = "mysql_clear_password" if self.mode == "clear_text" else "mysql_native_password"
                writer.write(greeting(plugin))
                await writer.drain()
                await self._receive_packet(reader)
                if self.mode != "no_tls":  # what a server does when the client answered with another method
                    writer.write(_packet(2, b"\xfemysql_clear_password\x00"))
                    await writer.drain()
                    await self._receive_packet(reader)
            await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        except asyncio.IncompleteReadError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _receive_packet(self, reader: asyncio.StreamReader) -> None:
        header = await reader.readexactly(4)
        self.received += header + await reader.readexactly(int.from_bytes(header[:3], "little"))
