"""Writes an audit row for every state-changing call under /api/v1 (POST, PUT, PATCH, DELETE), whatever its
outcome — including refusals before the handler ran (401, 403, 404, 422). The row is committed in its own
transaction before the response starts, so whoever sees the answer can find its audit row."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ferry_control.core.db import session_scope
from ferry_control.schemas.common import ID_MAX
from ferry_control.services.audit import AuditService

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
AUDITED_PREFIX = "/api/v1/"


class AuditMiddleware:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") not in MUTATING_METHODS
            or not scope.get("path", "").startswith(AUDITED_PREFIX)
        ):
            await self.app(scope, receive, send)
            return
        started = False

        async def send_after_audit(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                await self._record(scope, message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_after_audit)
        except Exception:
            if not started:  # an unhandled error: the outer middleware answers 500
                await self._record(scope, 500)
            raise

    async def _record(self, scope: Scope, status: int) -> None:
        app = scope["app"]
        state = scope.get("state") or {}
        principal = state.get("principal")
        route = scope.get("route")
        path_params: dict[str, Any] = dict(scope.get("path_params") or {})
        cluster_id = path_params.get("cluster_id")
        details: dict[str, Any] = {"path_params": {k: str(v) for k, v in path_params.items()}}
        headers = dict(scope.get("headers") or [])
        if idempotency_key := headers.get(b"idempotency-key"):
            details["idempotency_key"] = idempotency_key.decode(errors="replace")[:200]
        async with session_scope(app.state.sessionmaker) as session:
            await AuditService(session).record(
                actor=principal.name if principal else None,
                token_id=principal.token_id if principal else None,
                action=getattr(route, "name", None) or "unmatched",
                method=scope["method"],
                path=scope["path"],
                cluster_id=_int_or_none(cluster_id),
                status_code=status,
                details=details,
            )


def _int_or_none(value: Any) -> int | None:
    """The cluster id of the path when it can be one (a 32-bit id); None otherwise (the request was refused)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number <= ID_MAX else None
