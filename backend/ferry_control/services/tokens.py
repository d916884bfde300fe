"""API tokens: creation (the token is returned once), authentication of a bearer token, listing, revocation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.errors import Conflict, NotFound, Unauthorized, Unprocessable
from ferry_control.core.security import Role, display_prefix, generate_token, hash_token, looks_like_token
from ferry_control.models import ApiToken
from ferry_control.repositories.tokens import TokenRepository


@dataclass(frozen=True)
class Principal:
    """Who is calling: the token's id, name, role and when it stops working (None: never)."""

    token_id: int
    name: str
    role: Role
    expires_at: datetime | None = None


class TokenService:
    def __init__(self, session: AsyncSession, settings: Settings):
        self.tokens = TokenRepository(session)
        self.settings = settings

    def _hash(self, token: str) -> str:
        return hash_token(token, self.settings.security.token_pepper.get_secret_value())

    async def create(self, name: str, role: Role, expires_at: datetime | None = None) -> tuple[ApiToken, str]:
        """Returns the stored row and the token (which is not stored)."""
        if await self.tokens.get_by_name(name) is not None:
            raise Conflict(f"a token named {name!r} exists already", code="token_name_taken")
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise Unprocessable("expires_at must be in the future", code="token_expiry_past")
        token = generate_token()
        row = await self.tokens.add(
            ApiToken(
                name=name,
                role=role,
                token_hash=self._hash(token),
                display_prefix=display_prefix(token),
                expires_at=expires_at,
            )
        )
        return row, token

    async def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise Unauthorized("missing 'Authorization: Bearer <token>' header")
        if not looks_like_token(token):
            raise Unauthorized("malformed API token")
        row = await self.tokens.get_by_hash(self._hash(token))
        if row is None:
            raise Unauthorized("unknown API token")
        if row.revoked_at is not None:
            raise Unauthorized(f"API token {row.name!r} was revoked")
        now = datetime.now(UTC)
        if row.expires_at is not None and row.expires_at <= now:
            raise Unauthorized(f"API token {row.name!r} expired at {row.expires_at.isoformat()}")
        resolution = timedelta(seconds=self.settings.security.token_last_used_resolution_s)
        if row.last_used_at is None or now - row.last_used_at >= resolution:
            row.last_used_at = now
            await self.tokens.flush()
        return Principal(token_id=row.id, name=row.name, role=row.role, expires_at=row.expires_at)

    async def still_valid(self, token_id: int) -> bool:
        """Whether the token still authenticates (not revoked, not expired): long requests (event streams) ask
        again while they run."""
        row = await self.tokens.get_fresh(token_id)
        if row is None or row.revoked_at is not None:
            return False
        return row.expires_at is None or row.expires_at > datetime.now(UTC)

    async def list(
        self, state: str = "active", search: str | None = None, limit: int = 100, before_id: int | None = None
    ) -> Sequence[ApiToken]:
        """A page of tokens, newest first (see `TokenRepository.page`)."""
        return await self.tokens.page(state, search, limit, before_id, datetime.now(UTC))

    async def revoke(self, token_id: int) -> ApiToken:
        row = await self.tokens.get(token_id)
        if row is None:
            raise NotFound(f"API token {token_id} does not exist", code="token_not_found")
        if row.revoked_at is None:
            row.revoked_at = datetime.now(UTC)
            await self.tokens.flush()
        return row
