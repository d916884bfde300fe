"""MariaDB's errors as typed driver errors: each keeps the server's errno (as `code`) and message, and has the kind
of failure it is (a running connection is a conflict, a missing one not found, …) and the generic refusal class
of that kind, so services catch them without knowing MariaDB's numbers.
Not reaching the server (client errors 2003, 2006, 2013, 2055, a client-side timeout) is `ServerUnreachable`."""

from __future__ import annotations

from ferry_control.drivers.errors import (
    DriverError,
    ErrorKind,
    ServerConflict,
    ServerNotFound,
    ServerRefused,
    ServerUnauthorized,
    ServerUnreachable,
)

#: Client errors that mean the server could not be reached or the connection was lost.
UNREACHABLE_ERRNOS = frozenset({2002, 2003, 2005, 2006, 2013, 2026, 2055})


class MariadbError(ServerRefused):
    """The server answered with an error; `errno` is its number, `code` the same as text."""

    def __init__(self, address: str, errno: int, message: str):
        super().__init__(address, str(errno), message)
        self.errno = errno


class AccessDenied(MariadbError, ServerUnauthorized):
    """1045: wrong user or password."""

    default_kind = ErrorKind.unauthorized


class PrivilegeMissing(MariadbError):
    """1227 (and other 'access denied' for an operation): the message names the privilege."""

    default_kind = ErrorKind.forbidden


class ReplicationRunning(MariadbError, ServerConflict):
    """1198: the operation needs the replication connection stopped."""

    default_kind = ErrorKind.conflict


class ReplicationNotConfigured(MariadbError, ServerNotFound):
    """1200 / 1617: no such replication connection."""

    default_kind = ErrorKind.not_found


class PositionNotInBinlog(MariadbError, ServerConflict):
    """1236: the master no longer (or never) has the requested position in its binlog."""

    default_kind = ErrorKind.conflict


class GtidStrictOrder(MariadbError, ServerConflict):
    """1950: gtid_strict_mode refused an out-of-order GTID."""

    default_kind = ErrorKind.conflict


class ReadOnly(MariadbError, ServerConflict):
    """1290: the server runs with read_only (or another option that forbids the statement)."""

    default_kind = ErrorKind.conflict


class BinlogError(MariadbError):
    """1220: an error reading the master's binlog."""


class StatementTimedOut(MariadbError):
    """1969: the server-side bound (max_statement_time) interrupted the statement."""

    default_kind = ErrorKind.timed_out


class BadStatement(MariadbError):
    """A statement or value the server rejected (syntax, unknown variable value, …)."""

    default_kind = ErrorKind.bad_request


_BY_ERRNO: dict[int, type[MariadbError]] = {
    1045: AccessDenied,
    1044: PrivilegeMissing,
    1142: PrivilegeMissing,
    1227: PrivilegeMissing,
    1370: PrivilegeMissing,
    1198: ReplicationRunning,
    1200: ReplicationNotConfigured,
    1617: ReplicationNotConfigured,
    1236: PositionNotInBinlog,
    1950: GtidStrictOrder,
    1290: ReadOnly,
    1220: BinlogError,
    1969: StatementTimedOut,
    1064: BadStatement,
    1231: BadStatement,
    1232: BadStatement,
}


def error_for(address: str, errno: int, message: str) -> DriverError:
    """The typed error for a server or client error number."""
    if errno in UNREACHABLE_ERRNOS:
        return ServerUnreachable(address, str(errno), message)
    return _BY_ERRNO.get(errno, MariadbError)(address, errno, message)
