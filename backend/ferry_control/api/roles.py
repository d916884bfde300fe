"""GET /roles/{server}/writer and /roles/{server}/reader: health checks for proxies (HAProxy's `http-check`,
docs/proxies.md) — 200 while the server holds the role, 503 (the error body naming why) while it does not. Any
token; `{server}` is a server's id, or `s<id>` as Ferry names servers in a rendered HAProxy configuration, so one
check line (`uri-lf /api/v1/roles/%[srv_name]/writer`) serves every server of a backend."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query

from ferry_control.api.deps import CurrentToken, SessionDep, SettingsDep
from ferry_control.core.errors import ServiceUnavailable, Unprocessable
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.roles import RoleRead
from ferry_control.services.roles import RoleAnswer, RoleService

router = APIRouter(prefix="/roles", tags=["roles"], responses=error_responses(401, 422, 503))

ServerRef = Path(
    pattern=r"^s?[1-9][0-9]{0,9}$", description="A server's id, or `s<id>` (the server's name in a rendered HAProxy "
    "configuration).",
)  # fmt: skip


def _answer(answer: RoleAnswer) -> RoleRead:
    if not answer.ok:
        raise ServiceUnavailable(
            answer.reason, code=f"not_{answer.role}", details={"registered_server_id": answer.server_id}
        )
    return RoleRead(registered_server_id=answer.server_id, role=answer.role, reason=answer.reason)  # type: ignore[arg-type]


def _id(server: str) -> int:
    number = int(server.removeprefix("s"))
    if number > ID_MAX:
        raise Unprocessable(f"server: {server!r} is no server id (at most {ID_MAX})", code="validation_error")
    return number


@router.get("/{server}/writer", response_model=RoleRead, summary="Is this server its cluster's writable master?")
async def get_writer(session: SessionDep, _: CurrentToken, server: str = ServerRef) -> RoleRead:
    return _answer(await RoleService(session).writer(_id(server)))


@router.get("/{server}/reader", response_model=RoleRead, summary="Is this server a replica within the lag limit?")
async def get_reader(
    session: SessionDep,
    settings: SettingsDep,
    _: CurrentToken,
    server: str = ServerRef,
    max_lag_s: float | None = Query(
        None, ge=0, le=86400, description="The lag limit in seconds, in every domain (default: reader_max_lag_s)."
    ),
) -> RoleRead:
    limit = settings.proxies.reader_max_lag_s if max_lag_s is None else max_lag_s
    return _answer(await RoleService(session).reader(_id(server), limit))
