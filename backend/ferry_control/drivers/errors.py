"""Typed driver errors. A server's refusal carries its error code and message; not reaching it is its own type."""

from __future__ import annotations


class DriverError(Exception):
    """Something went wrong talking to a server."""

    def __init__(self, address: str, code: str, message: str):
        super().__init__(f"{address}: {code}: {message}")
        self.address = address
        self.code = code
        self.message = message


class ServerUnreachable(DriverError):
    """No answer: connection refused, reset or timed out."""


class WriteOutcomeUnknown(ServerUnreachable):
    """A write was sent and its answer was lost (the connection broke or timed out): it may have committed or not."""


class ServerProtocolError(DriverError):
    """The server answered something that is not what its API promises."""


class ServerRefused(DriverError):
    """The server answered with an error: `code` and `message` are the server's own, `status` its HTTP status."""

    def __init__(self, address: str, status: int, code: str, message: str):
        super().__init__(address, code, message)
        self.status = status


class ServerUnauthorized(ServerRefused):
    """401: the admin token is missing or wrong."""


class ServerBadRequest(ServerRefused):
    """400: the server rejected the request's parameters."""


class ServerNotFound(ServerRefused):
    """404: no such endpoint or connection."""


class ServerConflict(ServerRefused):
    """409: the request conflicts with the server's state (e.g. the connection is running)."""


class ServerFailed(ServerRefused):
    """5xx: the server failed while handling the request."""


def refusal_for_status(status: int) -> type[ServerRefused]:
    return {401: ServerUnauthorized, 400: ServerBadRequest, 404: ServerNotFound, 409: ServerConflict}.get(
        status, ServerFailed if status >= 500 else ServerRefused
    )
