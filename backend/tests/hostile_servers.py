"""A hostile server for the collector's tests: a fake ferryd admin API whose status answer the test chooses — a
malformed, truncated, huge, slow or never-ending document — served on a real loopback port (the collector speaks
to it over HTTP exactly as it speaks to a node). Only tests of a lying server use it; every other test talks to
real ferryd and mariadbd."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any


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

    @classmethod
    def json(cls, document: Any, **options: Any) -> Answer:
        return cls(body=json.dumps(document).encode(), **options)


class FakeNode:
    """An ASGI app answering `answer` to every request; counts the requests it had."""

    def __init__(self, answer: Answer | None = None):
        self.answer = answer or Answer()
        self.requests = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.requests += 1
        answer = self.answer
        if answer.delay_s:
            await asyncio.sleep(answer.delay_s)
        length = len(answer.body) + (1000 if answer.truncated else 0)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(length).encode())]
        if answer.never_ends:
            headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        if answer.never_ends:
            await send({"type": "http.response.body", "body": answer.body[:10], "more_body": True})
            await asyncio.Event().wait()  # until the server is shut down
        await send({"type": "http.response.body", "body": answer.body, "more_body": answer.truncated})
        if answer.truncated:
            raise ConnectionAbortedError("the fake node closes a truncated answer")


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
