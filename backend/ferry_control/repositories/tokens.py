"""API tokens."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import ApiToken


class TokenRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def get_by_hash(self, token_hash: str) -> ApiToken | None:
        return await self.session.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash))

    async def get(self, token_id: int) -> ApiToken | None:
        return await self.session.get(ApiToken, token_id)

    async def get_fresh(self, token_id: int) -> ApiToken | None:
        """The row as the database has it now (not the session's cached copy)."""
        return await self.session.get(ApiToken, token_id, populate_existing=True)

    async def get_by_name(self, name: str) -> ApiToken | None:
        return await self.session.scalar(select(ApiToken).where(ApiToken.name == name))

    async def list(self) -> Sequence[ApiToken]:
        return (await self.session.scalars(select(ApiToken).order_by(ApiToken.id))).all()

    async def add(self, token: ApiToken) -> ApiToken:
        self.session.add(token)
        await self.session.flush()
        return token

    async def flush(self) -> None:
        await self.session.flush()
