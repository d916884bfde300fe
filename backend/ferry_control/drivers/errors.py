"""Typed driver errors. Each says what kind of failure it is (`ErrorKind`: the server could not be reached, it
refused because of its state, it knows no such thing, …) and keeps the server's own error code and message; no
driver error carries an HTTP status — the API maps kinds to statuses in one place (api/errors.py)."""

from __future__ import annotations

import enum


class ErrorKind(enum.StrEnum):
    """What kind of failure a driver error is, whatever the server's kind and its own error codes."""

    #: No answer: connection refused, reset or timed out (the server may be down or partitioned).
    unavailable = "unavailable"
    #: A write was sent and its answer was lost: it may have committed or not.
    outcome_unknown = "outcome_unknown"
    #: The server answered something that is not what its API promises.
    protocol = "protocol"
    #: The server refused the control plane's credentials (missing or wrong).
    unauthorized = "unauthorized"
    #: The credentials were accepted but lack a privilege the request needs.
    forbidden = "forbidden"
    #: The server rejected the request's parameters.
    bad_request = "bad_request"
    #: No such thing on the server (a replication connection, an endpoint).
    not_found = "not_found"
    #: The request conflicts with the server's state (the connection runs, the server is read-only, …).
    conflict = "conflict"
    #: The server is busy with the same kind of request for another caller: asking again later may succeed.
    busy = "busy"
    #: The server's own bound on the request ran out before it finished.
    timed_out = "timed_out"
    #: Any other refusal by the server.
    refused = "refused"
    #: The server failed while handling the request.
    failed = "failed"
    #: The control plane cannot even ask: no credentials, no driver for the kind, an address missing, …
    not_configured = "not_configured"
    #: The request cannot be done as asked on this kind of server, whatever its state (a skip on a kind that has
    #: none, a filter the kind does not have).
    unsupported = "unsupported"


class DriverError(Exception):
    """Something went wrong talking to a server; `kind` says what kind of failure (see `ErrorKind`)."""

    #: The kind of a subclass's errors, unless one is given.
    default_kind = ErrorKind.failed

    def __init__(self, address: str, code: str, message: str, *, kind: ErrorKind | None = None):
        super().__init__(f"{address}: {code}: {message}")
        self.address = address
        self.code = code
        self.message = message
        self.kind = kind or self.default_kind


class ServerUnreachable(DriverError):
    """No answer: connection refused, reset or timed out."""

    default_kind = ErrorKind.unavailable


class WriteOutcomeUnknown(ServerUnreachable):
    """A write was sent and its answer was lost (the connection broke or timed out): it may have committed or not."""

    default_kind = ErrorKind.outcome_unknown


class ServerProtocolError(DriverError):
    """The server answered something that is not what its API promises."""

    default_kind = ErrorKind.protocol


class ServerRefused(DriverError):
    """The server answered with an error: `code` and `message` are the server's own."""

    default_kind = ErrorKind.refused


class ServerUnauthorized(ServerRefused):
    """The server refused the credentials (ferryd: the admin token is missing or wrong)."""

    default_kind = ErrorKind.unauthorized


class ServerBadRequest(ServerRefused):
    """The server rejected the request's parameters."""

    default_kind = ErrorKind.bad_request


class ServerNotFound(ServerRefused):
    """No such endpoint or connection."""

    default_kind = ErrorKind.not_found


class ServerConflict(ServerRefused):
    """The request conflicts with the server's state (e.g. the connection is running)."""

    default_kind = ErrorKind.conflict


class ServerFailed(ServerRefused):
    """The server failed while handling the request."""

    default_kind = ErrorKind.failed


#: The refusal class of each kind a server's refusal can be.
REFUSALS: dict[ErrorKind, type[ServerRefused]] = {
    ErrorKind.unauthorized: ServerUnauthorized,
    ErrorKind.bad_request: ServerBadRequest,
    ErrorKind.not_found: ServerNotFound,
    ErrorKind.conflict: ServerConflict,
    ErrorKind.failed: ServerFailed,
}


def refusal(address: str, kind: ErrorKind, code: str, message: str) -> ServerRefused:
    """A server's refusal of `kind`, as the most specific class there is for it."""
    return REFUSALS.get(kind, ServerRefused)(address, code, message, kind=kind)
