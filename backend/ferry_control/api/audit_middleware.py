"""An audit row for every state-changing call under /api/v1 (POST, PUT, PATCH, DELETE), whatever its outcome —
including refusals before the handler ran (401, 403, 404, 422).

A call whose handler returns writes its row in its own change's transaction (`audit_in_transaction`, run by the
session dependency before it commits): the change is audited or not made — if the row cannot be written, the
change rolls back with it. A call that did not get that far (refused, failed, or with no database session) is
written here, in a transaction of its own, before the response starts, so whoever sees the answer can find its
audit row. Every field is bounded to its column."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
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
        if not audited(scope):
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
        state = scope.get("state") or {}
        if state.get("audited"):
            return  # written with the change itself
        if state.get("audit_skip"):
            # Refused before any work (a client past its failed-authentication limit): counted, one row a minute.
            peer = scope.get("client")
            client = state.get("client_address") or (peer[0] if peer else "unknown")
            scope["app"].state.denials.add(client, scope.get("path", ""))
            return
        async with session_scope(scope["app"].state.sessionmaker) as session:
            await _write(session, scope, status)


def audited(scope: Scope) -> bool:
    """Whether a call is one the audit log records."""
    return (
        scope["type"] == "http"
        and scope.get("method") in MUTATING_METHODS
        and scope.get("path", "").startswith(AUDITED_PREFIX)
    )


async def audit_in_transaction(session: AsyncSession, scope: Scope) -> None:
    """The audit row of a call whose handler returned, in the transaction of its change (before it commits), with
    the route's status; the middleware then writes none for it."""
    state = scope.setdefault("state", {})
    if not audited(scope) or state.get("audited"):
        return
    route = scope.get("route")
    await _write(session, scope, getattr(route, "status_code", None) or 200)
    state["audited"] = True


async def _write(session: AsyncSession, scope: Scope, status: int) -> None:
    state = scope.get("state") or {}
    principal = state.get("principal")
    route = scope.get("route")
    path_params: dict[str, Any] = dict(scope.get("path_params") or {})
    cluster_id = path_params.get("cluster_id")
    details: dict[str, Any] = {"path_params": {k: str(v)[:200] for k, v in path_params.items()}}
    headers = dict(scope.get("headers") or [])
    if idempotency_key := headers.get(b"idempotency-key"):
        details["idempotency_key"] = idempotency_key.decode(errors="replace")[:200]
    if status < 400 and (extra := state.get("audit_details")):
        details.update(extra)  # what the handler says of its change (a maintenance's owner, reason and end)
    await AuditService(session).record(
        actor=principal.name if principal else None,
        token_id=principal.token_id if principal else None,
        action=getattr(route, "name", None) or "unmatched",
        method=scope["method"],
        path=scope["path"],
        cluster_id=_int_or_none(cluster_id),
        status_code=status,
        details=details,
        server_id=_int_or_none(path_params.get("registered_server_id")),
    )


def _int_or_none(value: Any) -> int | None:
    """The cluster or server id of the path when it can be one (a 32-bit id); None otherwise (the request was
    refused)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number <= ID_MAX else None
