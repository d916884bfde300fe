"""How the API answers a failure: every error a handler lets through — a service's `AppError`, a driver error a
service let pass, FastAPI's own validation and routing errors — becomes the one JSON body (`core.errors.error_body`)
with its status. Driver errors carry no HTTP status, only their kind (`drivers.errors.ErrorKind`):
`DRIVER_ERROR_STATUS` is the one place a kind becomes a status."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ferry_control.core.errors import AppError, UpstreamError, error_body
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.schemas.registered_ids import renamed_field_message

#: The HTTP status of a driver error a service let through, by its kind. Every kind is the server's failure, not
#: the caller's — a server refusing Ferry's login is no 401 of the API, a connection running on a server no 409 of
#: the request (services check what a caller can be told precisely, e.g. operation_prechecks) — so each is a 502.
DRIVER_ERROR_STATUS: dict[ErrorKind, int] = dict.fromkeys(ErrorKind, UpstreamError.status_code)


def _validation_details(exc: RequestValidationError) -> list[dict[str, Any]]:
    details = []
    for e in exc.errors():
        loc = list(e.get("loc", ()))
        message = e.get("msg", "")
        if e.get("type") == "extra_forbidden" and len(loc) > 1 and loc[0] == "body" and isinstance(loc[-1], str):
            message = renamed_field_message(loc[-1]) or message
        item: dict[str, Any] = {"loc": loc, "message": message, "type": e.get("type", "")}
        ctx = e.get("ctx")
        if ctx:
            item["ctx"] = {
                k: v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for k, v in ctx.items()
            }
        details.append(item)
    # An old name of a renamed field first: what the caller has to change is said at once.
    return sorted(
        details, key=lambda d: d["type"] != "extra_forbidden" or d["message"] == "Extra inputs are not permitted"
    )


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
