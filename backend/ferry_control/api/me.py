"""GET /api/v1/me: the calling token's name, role, capabilities and expiry (any valid token), so a client can learn
what to show without probing routes it may not use, and when to forget a kept token."""

from __future__ import annotations

from fastapi import APIRouter

from ferry_control.api.deps import CurrentToken
from ferry_control.schemas.common import error_responses
from ferry_control.schemas.token import Me

router = APIRouter(tags=["tokens"], responses=error_responses(401))


@router.get(
    "/me",
    response_model=Me,
    summary="The calling token: name, role and capabilities",
    description="Answers for any valid token, whatever its role; an unknown or revoked token is a 401.",
)
async def get_me(principal: CurrentToken) -> Me:
    return Me(
        name=principal.name,
        role=principal.role,
        capabilities=principal.role.capabilities,
        expires_at=principal.expires_at,
    )
