"""Dependencies injected through `Annotated` aliases: the request's session (commits before the response is
sent, rolls back on error), the app's shared services, and the caller's token with role checks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.errors import Forbidden
from ferry_control.core.security import Role
from ferry_control.drivers.factory import DriverFactory
from ferry_control.services.event_bus import EventBus
from ferry_control.services.orchestrator.runner import OperationRunner
from ferry_control.services.tokens import Principal, TokenService


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with session_scope(request.app.state.sessionmaker) as session:
        yield session


#: scope="function": the transaction commits (or rolls back) before the response goes out.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_drivers(request: Request) -> DriverFactory:
    return request.app.state.drivers


def get_bus(request: Request) -> EventBus:
    return request.app.state.bus


def get_runner(request: Request) -> OperationRunner:
    return request.app.state.runner


SettingsDep = Annotated[Settings, Depends(get_settings)]
RunnerDep = Annotated[OperationRunner, Depends(get_runner)]
DriversDep = Annotated[DriverFactory, Depends(get_drivers)]
BusDep = Annotated[EventBus, Depends(get_bus)]

bearer = HTTPBearer(auto_error=False, description="An API token: `Authorization: Bearer ferry_…`")


async def current_token(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    principal = await TokenService(session, settings).authenticate(credentials.credentials if credentials else None)
    request.state.principal = principal
    return principal


def require_role(role: Role):  # type: ignore[no-untyped-def]
    async def check(principal: Annotated[Principal, Depends(current_token)]) -> Principal:
        if not principal.role.allows(role):
            raise Forbidden(f"token {principal.name!r} has role {principal.role.value}; this needs {role.value}")
        return principal

    return check


CurrentToken = Annotated[Principal, Depends(current_token)]
OperatorToken = Annotated[Principal, Depends(require_role(Role.operator))]
AdminToken = Annotated[Principal, Depends(require_role(Role.admin))]
