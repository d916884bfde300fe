"""The errors services raise for the API to answer with (`AppError` subclasses, each with its HTTP status and code),
and the one JSON body of every failure, `{"error": {"code", "message", "details"}}`, the same shape the nodes use.
`api/errors.py` turns them, FastAPI's own validation and routing errors, and driver errors into that body."""

from __future__ import annotations

from typing import Any


class AppError(Exception):
    status_code = 400
    code = "bad_request"

    def __init__(
        self, message: str, *, code: str | None = None, details: Any = None, headers: dict[str, str] | None = None
    ):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details
        self.headers = headers


class NotFound(AppError):
    status_code = 404
    code = "not_found"


class Conflict(AppError):
    status_code = 409
    code = "conflict"


class Unauthorized(AppError):
    status_code = 401
    code = "unauthorized"

    def __init__(self, message: str):
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(AppError):
    status_code = 403
    code = "forbidden"


class Unprocessable(AppError):
    """Well-formed but refused: a value the settings do not allow (a webhook target, a read beyond its cap)."""

    status_code = 422
    code = "validation_error"


class TooManyRequests(AppError):
    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, retry_after_s: float, *, code: str | None = None, details: Any = None):
        super().__init__(
            message, code=code, details=details, headers={"Retry-After": str(max(1, int(retry_after_s + 0.999)))}
        )


class ServiceUnavailable(AppError):
    status_code = 503
    code = "unavailable"


class UpstreamError(AppError):
    """A server the request needed failed or could not be reached."""

    status_code = 502
    code = "server_error"


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return {"error": body}
