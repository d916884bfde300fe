"""API errors: one JSON body for every failure, `{"error": {"code", "message", "details"}}`, the same shape the
nodes use. Services raise `AppError` subclasses; `install_error_handlers` maps them, FastAPI's own validation and
routing errors, and driver errors a service let through to that body. Driver errors carry no HTTP status, only
their kind (`drivers.errors.ErrorKind`): `DRIVER_ERROR_STATUS` is the one place a kind becomes a status."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ferry_control.drivers.errors import DriverError, ErrorKind


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


#: The HTTP status of a driver error a service let through, by its kind. Every kind is the server's failure, not
#: the caller's — a server refusing Ferry's login is no 401 of the API, a connection running on a server no 409 of
#: the request (services check what a caller can be told precisely, e.g. operation_prechecks) — so each is a 502.
DRIVER_ERROR_STATUS: dict[ErrorKind, int] = dict.fromkeys(ErrorKind, UpstreamError.status_code)


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return {"error": body}


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    details = []
    for e in exc.errors():
        item: dict[str, Any] = {"loc": list(e.get("loc", ())), "message": e.get("msg", ""), "type": e.get("type", "")}
        ctx = e.get("ctx")
        if ctx:
            item["ctx"] = {
                k: v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for k, v in ctx.items()
            }
        details.append(item)
    return details


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(_: Request, exc: AppError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message, exc.details), exc.status_code, headers=exc.headers)

    @app.exception_handler(DriverError)
    async def _driver_error(_: Request, exc: DriverError) -> JSONResponse:
        message = f"server {exc.address} answered {exc.code}: {exc.message}"
        return JSONResponse(
            error_body(UpstreamError.code, message, {"server_code": exc.code, "kind": exc.kind.value}),
            DRIVER_ERROR_STATUS[exc.kind],
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = _validation_details(exc)
        first = details[0] if details else {"loc": [], "message": "invalid request"}
        where = ".".join(str(part) for part in first["loc"])
        message = f"{where}: {first['message']}" if where else str(first["message"])
        return JSONResponse(error_body("validation_error", message, details), 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=exc.headers)
