"""A TCP proxy on a free loopback port in front of a real server, for fault tests: it passes bytes both ways, or
delays each chunk, or blackholes (keeps connections open and forwards nothing), or cuts (closes every connection and
every new one at once). The mode can change at any time; what is already connected follows it."""

from __future__ import annotations

import asyncio
import contextlib
import enum


class Mode(enum.StrEnum):
    passing = "pass"
    delay = "delay"
    blackhole = "blackhole"
    cut = "cut"


#: Bytes read at once from either side.
CHUNK_BYTES = 64 * 1024


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, delay_s: float = 0.0):
        self._target = (target_host, target_port)
        self.mode = Mode.passing
        #: How long each chunk waits in `delay` mode (the delay the network would add).
        self.delay_s = delay_s
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        self._close_all()
        await self._server.wait_closed()

    def set(self, mode: Mode) -> None:
        self.mode = mode
        if mode == Mode.cut:
            self._close_all()

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self.mode == Mode.cut:
            client_writer.close()
            return
        try:
            server_reader, server_writer = await asyncio.open_connection(*self._target)
        except OSError:
            client_writer.close()
            return
        self._writers |= {client_writer, server_writer}
        try:
            await asyncio.gather(self._pump(client_reader, server_writer), self._pump(server_reader, client_writer))
        finally:
            for writer in (client_writer, server_writer):
                self._writers.discard(writer)
                writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await reader.read(CHUNK_BYTES):
                if self.mode == Mode.cut:
                    break
                if self.mode == Mode.blackhole:
                    continue
                if self.mode == Mode.delay:
                    await asyncio.sleep(self.delay_s)
                writer.write(chunk)
                await writer.drain()
        writer.close()
