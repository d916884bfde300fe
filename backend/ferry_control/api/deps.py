"""Dependencies injected through `Annotated` aliases: the request's session (commits before the response is
sent, rolls back on error), the app's shared services, and the caller's token with role checks."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.api.audit_middleware import audit_in_transaction
from ferry_control.core.client_address import TrustedProxies
from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.errors import Forbidden, TooManyRequests, Unauthorized
from ferry_control.core.rate_limit import RateLimiter
from ferry_control.core.secrets import SecretBox
from ferry_control.core.security import Role
from ferry_control.drivers.factory import DriverFactory
from ferry_control.services.event_bus import EventBus
from ferry_control.services.orchestrator.runner import OperationRunner
from ferry_control.services.tokens import Principal, TokenService


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with session_scope(request.app.state.sessionmaker) as session:
        yield session
        # The handler returned: a state-changing call's audit row joins its change's transaction.
        await audit_in_transaction(session, request.scope)


#: scope="function": the transaction commits (or rolls back) before the response goes out.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_drivers(request: Request) -> DriverFactory:
    drivers: DriverFactory = request.app.state.drivers
    return drivers


def get_bus(request: Request) -> EventBus:
    bus: EventBus = request.app.state.bus
    return bus


def get_runner(request: Request) -> OperationRunner:
    runner: OperationRunner = request.app.state.runner
    return runner


def get_secrets(request: Request) -> SecretBox | None:
    secrets: SecretBox | None = request.app.state.secrets
    return secrets


SettingsDep = Annotated[Settings, Depends(get_settings)]
RunnerDep = Annotated[OperationRunner, Depends(get_runner)]
DriversDep = Annotated[DriverFactory, Depends(get_drivers)]
BusDep = Annotated[EventBus, Depends(get_bus)]
SecretsDep = Annotated[SecretBox | None, Depends(get_secrets)]

bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer ferry_…`")


async def current_token(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    failures: RateLimiter = request.app.state.auth_failures
    proxies: TrustedProxies = request.app.state.trusted_proxies
    client = proxies.client_of(
        request.client.host if request.client else None, request.headers.getlist("x-forwarded-for")
    )
    request.state.client_address = client  # the denials' tally counts the same address
    try:
        # A missing or malformed token fails before any database work; a well-formed one costs one lookup.
        principal = await TokenService(session, settings).authenticate(credentials.credentials if credentials else None)
    except Unauthorized:
        if (wait_s := failures.wait_s(client)) > 0:
            # Past the address's limit: refused, and not audited one by one (a flood cannot fill the audit log).
            # A valid token from the same address (many users behind one proxy) is still served.
            request.state.audit_skip = True
            raise TooManyRequests(
                f"too many failed authentications from {client}; retry in {wait_s:.0f} s", wait_s,
                code="too_many_failures",
            ) from None  # fmt: skip
        failures.take(client)
        raise
    request.state.principal = principal
    return principal


def require_role(role: Role):  # type: ignore[no-untyped-def]
    async def check(principal: Annotated[Principal, Depends(current_token)]) -> Principal:
        if not principal.role.allows(role):
            raise Forbidden(f"token {principal.name!r} has role {principal.role.value}; this needs {role.value}")
        return principal

    return check


async def expensive_read(request: Request, principal: Annotated[Principal, Depends(current_token)]) -> Principal:
    """Any role, within the per-token rate limit of reads fanned out over a cluster's servers."""
    limiter: RateLimiter = request.app.state.rate_limiter
    wait_s = limiter.take(principal.token_id)
    if wait_s > 0:
        raise TooManyRequests(
            f"token {principal.name!r} made too many expensive reads (interleavings, binlog events); "
            f"retry in {wait_s:.1f} s",
            wait_s,
        )
    return principal


async def metrics_reader(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """/metrics: the metrics_token setting's token, or any valid API token."""
    token = credentials.credentials if credentials else None
    expected = (
        settings.security.metrics_token.get_secret_value() if settings.security.metrics_token is not None else None
    )
    if token and expected and hmac.compare_digest(token.encode(), expected.encode()):
        return
    if not token:
        raise Unauthorized("/metrics needs 'Authorization: Bearer <metrics token or API token>'")
    await TokenService(session, settings).authenticate(token)


CurrentToken = Annotated[Principal, Depends(current_token)]
ExpensiveReadToken = Annotated[Principal, Depends(expensive_read)]
MetricsReader = Annotated[None, Depends(metrics_reader)]
OperatorToken = Annotated[Principal, Depends(require_role(Role.operator))]
AdminToken = Annotated[Principal, Depends(require_role(Role.admin))]
