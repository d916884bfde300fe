"""API tokens (admin only): create (the token is shown once), list (by state, searched, paged), revoke."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Path, Query, status

from ferry_control.api.deps import AdminToken, SessionDep, SettingsDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.token import TokenCreate, TokenCreated, TokenRead
from ferry_control.services.tokens import TokenService

router = APIRouter(prefix="/tokens", tags=["tokens"], responses=error_responses(401, 403, 422))


@router.get("", response_model=list[TokenRead], summary="List API tokens, newest first")
async def list_tokens(
    session: SessionDep,
    settings: SettingsDep,
    _: AdminToken,
    state: Literal["active", "expired", "revoked", "all"] = Query(
        "active", description="active: neither revoked nor expired (the default); expired; revoked; all."
    ),
    q: str | None = Query(None, max_length=100, description="Only tokens whose name or first characters contain it."),
    limit: int = Query(100, ge=1, le=500),
    before_id: int | None = Query(None, ge=1, le=ID_MAX, description="Page back: tokens with a smaller id."),
) -> list[TokenRead]:
    tokens = await TokenService(session, settings).list(state, q or None, limit, before_id)
    return [TokenRead.model_validate(t) for t in tokens]


@router.post(
    "",
    response_model=TokenCreated,
    status_code=status.HTTP_201_CREATED,
    summary="Create an API token",
    responses=error_responses(409),
)
async def create_token(data: TokenCreate, session: SessionDep, settings: SettingsDep, _: AdminToken) -> TokenCreated:
    row, token = await TokenService(session, settings).create(data.name, data.role, data.expires_at)
    return TokenCreated(**TokenRead.model_validate(row).model_dump(), token=token)


@router.post(
    "/{token_id}/revoke", response_model=TokenRead, summary="Revoke an API token", responses=error_responses(404)
)
async def revoke_token(
    session: SessionDep, settings: SettingsDep, _: AdminToken, token_id: int = Path(ge=1, le=ID_MAX)
) -> TokenRead:
    return TokenRead.model_validate(await TokenService(session, settings).revoke(token_id))
