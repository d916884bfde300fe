"""Connections to one MariaDB server for the `mariadb` driver (aiomysql): a small pool, every statement bounded on
the server (the session's max_statement_time, or `SET STATEMENT max_statement_time=… FOR` when a call needs another
bound) and on the client (a slightly longer asyncio timeout), and `KILL QUERY <connection id>` from a second
connection when the caller gives up (cancellation or the client-side timeout), so nothing keeps running on the server
on behalf of a caller that has gone. A connection whose statement was abandoned is closed, never reused.

The password goes only where the server cannot read it: without TLS the client answers with mysql_native_password's
scramble whatever the server asks for (a server announcing or switching to mysql_clear_password, sha256_password or
caching_sha2_password's full authentication — each of which hands the password, or a key of the server's choosing,
to whoever answers — is refused), and a configured CA is never silently dropped by a server that does not offer TLS.

Errors come out as typed driver errors (errors.py) with the server's errno and message. `quote_ident` and
`quote_literal` quote names and text where a statement cannot take them as parameters."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiomysql
import pymysql
from pymysql.constants import CLIENT

from ferry_control.drivers.errors import DriverError, ServerProtocolError, ServerUnreachable
from ferry_control.drivers.mariadb.errors import error_for

log = logging.getLogger(__name__)


#: The one authentication method answered without TLS: a scramble of the password, never the password itself.
NATIVE_PASSWORD = "mysql_native_password"


class InsecureAuthentication(pymysql.err.OperationalError):
    """The server asked for something that would expose the password: refused before anything is sent."""


class _Connection(aiomysql.Connection):  # type: ignore[misc]
    """aiomysql's connection, refusing what would put the password within a server's (or a listener's) reach."""

    async def _request_authentication(self) -> None:
        if self._ssl_context is not None and not self.server_capabilities & CLIENT.SSL:
            raise InsecureAuthentication(
                2026, "a CA is configured for this server but it does not offer TLS: the login was not sent"
            )
        await super()._request_authentication()

    async def _process_auth(self, plugin_name: bytes, auth_packet: Any) -> Any:
        if not self._secure and plugin_name != NATIVE_PASSWORD.encode():
            name = plugin_name.decode("ascii", "replace")
            raise InsecureAuthentication(
                2059,
                f"the server asked for {name!r} authentication without TLS, which would expose the password: "
                f"refused (configure a CA for the cluster to allow it over TLS)",
            )
        return await super()._process_auth(plugin_name, auth_packet)


class _Cursor(aiomysql.DictCursor):  # type: ignore[misc]
    """Rows as dicts; the server's notes on a statement that succeeded (e.g. "Slave already has been stopped" for
    a STOP SLAVE that had nothing to stop) go to the debug log instead of becoming Python warnings, and cost no
    extra SHOW WARNINGS round trip."""

    async def _show_warnings(self, conn: Any) -> None:
        count = self._result.warning_count if self._result is not None else 0
        log.debug("%s: %d note(s) from the server", _short(str(self._last_executed or "")), count)


#: How much longer the client waits than the server-side bound, so the server's own error (1969) usually wins.
CLIENT_MARGIN_S = 1.0
#: A pooled connection idle longer than this is pinged before use (the server may have closed it).
IDLE_PING_AFTER_S = 30.0
#: Connections of a server's pool that long reads for viewers (binlog scans) never take: the collector's polls and
#: an operation's statements always find one.
RESERVED_FOR_OPERATIONS = 2
#: Bound on the KILL QUERY sent for an abandoned statement (connect + statement).
KILL_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class PoolSettings:
    """Where and as whom to connect, and the bounds."""

    host: str
    port: int
    user: str
    password: str
    tls_ca_file: str | None
    #: PEM text of a CA (besides or instead of the file).
    tls_ca: str | None
    connect_timeout_s: float
    #: The default server-side bound on every statement (the session's max_statement_time).
    statement_timeout_s: float
    #: Connections kept open to this server at most (a poll and an operation may overlap).
    connections_max: int

    def __repr__(self) -> str:
        return f"PoolSettings({self.user}@{self.host}:{self.port})"


class MariadbConnections:
    """A small pool of connections to one server; `query` runs one bounded statement."""

    def __init__(self, address: str, settings: PoolSettings):
        self.address = address
        self.settings = settings
        self._idle: list[tuple[aiomysql.Connection, float]] = []
        self._slots = asyncio.Semaphore(settings.connections_max)
        #: Taken around a long read (`heavy_read`) before any connection.
        self._heavy = asyncio.Semaphore(max(1, settings.connections_max - RESERVED_FOR_OPERATIONS))
        #: KILL QUERY tasks still running (kept referenced until they end).
        self._kills: set[asyncio.Task[None]] = set()
        #: Per-server memo of the `mariadb` driver's binlog scans (drivers built per call share it).
        self.binlog_scans: dict[str, Any] = {}
        #: Set by `retire`: connections are closed when released instead of kept.
        self._retired = False

    # -- connecting ----------------------------------------------------------------------------------------------

    async def connect(self) -> aiomysql.Connection:
        s = self.settings
        context = None
        if s.tls_ca_file or s.tls_ca:
            context = ssl.create_default_context(cafile=s.tls_ca_file, cadata=s.tls_ca)
        try:
            # aiomysql bounds the TCP connect only; the greeting, login and init command get the same bound here.
            async with asyncio.timeout(s.connect_timeout_s + CLIENT_MARGIN_S):
                conn = _Connection(
                    host=s.host, port=s.port, user=s.user, password=s.password, autocommit=True,
                    connect_timeout=s.connect_timeout_s, ssl=context, charset="utf8mb4",
                    init_command=f"SET SESSION max_statement_time = {s.statement_timeout_s:.3f}",
                    program_name="ferry-control",
                    # Over TLS the server's own method; without it, only the scramble.
                    auth_plugin=None if context is not None else NATIVE_PASSWORD,
                )  # fmt: skip
                await conn._connect()
                return conn
        except InsecureAuthentication as e:
            raise ServerProtocolError(self.address, "insecure_authentication", str(e.args[1])) from e
        except pymysql.err.MySQLError as e:
            cause = e.__cause__ or e.__context__
            if isinstance(cause, ssl.SSLError):  # aiomysql reports a failed TLS handshake as 2003
                raise ServerUnreachable(self.address, "tls", f"TLS with the server failed: {cause}") from e
            raise self._error(e) from e
        except TimeoutError as e:
            raise ServerUnreachable(
                self.address, "timeout", f"no greeting or login within {s.connect_timeout_s + CLIENT_MARGIN_S:.1f}s"
            ) from e
        except ssl.SSLError as e:
            raise ServerUnreachable(self.address, "tls", f"TLS with the server failed: {e}") from e
        except OSError as e:
            raise ServerUnreachable(self.address, "2003", f"cannot connect: {e!r}") from e

    async def _acquire(self) -> aiomysql.Connection:
        await self._slots.acquire()
        try:
            while self._idle:
                conn, since = self._idle.pop()
                if conn.closed or _peer_closed(conn):
                    conn.close()
                    continue
                if time.monotonic() - since > IDLE_PING_AFTER_S:
                    try:
                        async with asyncio.timeout(self.settings.connect_timeout_s):
                            await conn.ping(reconnect=False)
                    except (pymysql.err.MySQLError, OSError, TimeoutError):
                        conn.close()
                        continue
                return conn
            return await self.connect()
        except BaseException:
            self._slots.release()
            raise

    def _release(self, conn: aiomysql.Connection, reusable: bool) -> None:
        if reusable and not conn.closed and not self._retired:
            self._idle.append((conn, time.monotonic()))
        else:
            conn.close()
        self._slots.release()

    # -- statements ----------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def heavy_read(self) -> AsyncIterator[None]:
        """Around a read that may run long (a binlog scan): at most connections_max - RESERVED_FOR_OPERATIONS of
        them (at least one) at a time per server, waiting before taking a connection, so they never fill the pool."""
        async with self._heavy:
            yield

    async def query(self, statement: str, args: Any = None, *, timeout_s: float | None = None) -> list[dict[str, Any]]:
        """Runs one statement and returns its rows (column name → value). With `timeout_s`, the statement gets that
        server-side bound (SET STATEMENT max_statement_time=… FOR …) instead of the session's default."""
        bound = self.settings.statement_timeout_s if timeout_s is None else timeout_s
        if timeout_s is not None:
            statement = f"SET STATEMENT max_statement_time = {max(timeout_s, 0.001):.3f} FOR {statement}"
        conn = await self._acquire()
        reusable = False
        try:
            try:
                async with asyncio.timeout(bound + CLIENT_MARGIN_S):
                    async with conn.cursor(_Cursor) as cursor:
                        await cursor.execute(statement, args)
                        rows = await cursor.fetchall()
            except TimeoutError as e:
                self._kill_query(conn)
                raise ServerUnreachable(
                    self.address, "timeout", f"no answer within {bound + CLIENT_MARGIN_S:.1f}s: {_short(statement)}"
                ) from e
            except asyncio.CancelledError:
                self._kill_query(conn)
                raise
            except pymysql.err.MySQLError as e:
                error = self._error(e)
                # A server error leaves the connection usable; a lost connection does not.
                reusable = not isinstance(error, ServerUnreachable)
                raise error from e
            reusable = True
            return [dict(row) for row in rows]
        finally:
            self._release(conn, reusable)

    async def value(self, statement: str, args: Any = None, *, timeout_s: float | None = None) -> Any:
        """The first column of the first row (None when there is none)."""
        rows = await self.query(statement, args, timeout_s=timeout_s)
        return next(iter(rows[0].values())) if rows else None

    def _kill_query(self, conn: aiomysql.Connection) -> None:
        """Sends KILL QUERY for what `conn` is running, from another connection, in the background (so the caller's
        cancellation is not held up, and a second cancellation does not stop it)."""
        try:
            thread_id = conn.thread_id()
        except (TypeError, IndexError):
            return
        task = asyncio.get_running_loop().create_task(self._send_kill(thread_id))
        self._kills.add(task)
        task.add_done_callback(self._kills.discard)

    async def _send_kill(self, thread_id: int) -> None:
        try:
            async with asyncio.timeout(KILL_TIMEOUT_S):
                conn = await self.connect()
                try:
                    async with conn.cursor() as cursor:
                        await cursor.execute(f"KILL QUERY {int(thread_id)}")
                finally:
                    conn.close()
        except (DriverError, pymysql.err.MySQLError, OSError, TimeoutError):
            # 1094 (no such thread: it ended meanwhile) or the server is gone: nothing left to stop.
            pass

    async def kills_sent(self) -> None:
        """Waits for the KILL QUERY statements in flight (tests, and closing)."""
        if self._kills:
            await asyncio.gather(*self._kills, return_exceptions=True)

    def retire(self) -> None:
        """Closes the idle connections now and the others as they come back (the pool is no longer used)."""
        self._retired = True
        idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    async def aclose(self) -> None:
        await self.kills_sent()
        self.retire()

    def _error(self, e: pymysql.err.MySQLError) -> DriverError:
        errno = e.args[0] if e.args and isinstance(e.args[0], int) else 0
        message = str(e.args[1]) if len(e.args) > 1 else str(e)
        if errno == 0 or isinstance(e, pymysql.err.InterfaceError):
            return ServerUnreachable(self.address, str(errno or 2013), message or "connection lost")
        return error_for(self.address, errno, message)


def quote_ident(name: str) -> str:
    """A schema, table or connection name as a quoted identifier."""
    return "`" + name.replace("`", "``") + "`"


def quote_literal(text: str) -> str:
    """Text as a quoted string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _peer_closed(conn: aiomysql.Connection) -> bool:
    """Whether the server already closed this idle connection (it restarted, or ended the session): its stream has
    seen the end, so the connection is dropped without a round trip instead of failing the next statement."""
    reader = getattr(conn, "_reader", None)
    return reader is not None and reader.at_eof()


def _short(statement: str, length: int = 120) -> str:
    return statement if len(statement) <= length else statement[: length - 1] + "…"
