"""The ferry driver's HTTP client for ferryd's admin API: one aiohttp session per driver factory, opened on first use
in the running event loop (a new one if the loop changed), keeping at most `CONNECTIONS_PER_SERVER_MAX` keep-alive
connections per node address, TLS verified against the configured CA (else the system's), redirects never
followed, each answer read up to a byte bound.

aiohttp rather than httpx here, measured: a status request cost about 1,060 µs of CPU with httpx against 190 µs
with aiohttp (300 simulated nodes, each polled in turn; docs/benchmarks.md), and the collector makes one per server
every poll interval — at a thousand servers, httpx alone needed more than a core.

Errors are this module's own (`NodeTimeout`, `NodeTransportError`, `AnswerTooLarge`); the driver words them."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

#: Connections kept per node address (a poll and an operation's calls may overlap).
CONNECTIONS_PER_SERVER_MAX = 4
#: Bytes read from the socket at a time while an answer is read up to its bound.
READ_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class NodeAnswer:
    status: int
    content: bytes


class NodeTimeout(Exception):
    """No connection, or no bytes of the answer, within the call's timeouts."""


class NodeTransportError(Exception):
    """The connection failed or the node's answer was not HTTP this client could read."""


class AnswerTooLarge(Exception):
    """The answer declared or sent more than the bound; `declared` is its Content-Length when it gave one."""

    def __init__(self, declared: int | None):
        super().__init__(declared)
        self.declared = declared


class NodeHttp:
    def __init__(self, tls: ssl.SSLContext | None):
        #: The context https requests verify nodes with; None: the system's CAs (aiohttp's default).
        self._tls = tls
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(
                limit=0, limit_per_host=CONNECTIONS_PER_SERVER_MAX, ssl=self._tls if self._tls is not None else True
            )
            session = aiohttp.ClientSession(connector=connector, auto_decompress=False, trust_env=False)
            # The driver decides what is sent again (reads, a bounded number of times; changes never): aiohttp's own
            # silent resend of GET/PUT/DELETE on a dropped connection is turned off, as its test client does.
            session._retry_connection = False
            self._session, self._loop = session, loop
        return self._session

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        connect_timeout_s: float,
        read_timeout_s: float,
        bytes_max: int,
    ) -> NodeAnswer:
        """The answer's status and body (at most `bytes_max` bytes, else AnswerTooLarge)."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout_s, sock_read=read_timeout_s)
        query = {key: str(value) for key, value in params.items()} if params else None
        try:
            async with self._open().request(
                method, url, headers=headers, json=json, params=query, timeout=timeout, allow_redirects=False
            ) as response:
                declared = response.content_length
                if declared is not None and declared > bytes_max:
                    raise AnswerTooLarge(declared)
                chunks, size = [], 0
                async for chunk in response.content.iter_chunked(READ_CHUNK_BYTES):
                    size += len(chunk)
                    if size > bytes_max:
                        raise AnswerTooLarge(None)
                    chunks.append(chunk)
                return NodeAnswer(response.status, b"".join(chunks))
        except TimeoutError as e:  # aiohttp's ServerTimeoutError and connect timeouts are TimeoutErrors too
            raise NodeTimeout(type(e).__name__) from e
        except aiohttp.ClientError as e:
            raise NodeTransportError(repr(e)) from e

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
