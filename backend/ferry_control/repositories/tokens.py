"""API tokens: look-ups for authentication, and the admin's list — filtered by state, searched, paged."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, and_, func, or_, select
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

    async def authenticating(self, token_ids: Collection[int], now: datetime) -> set[int]:
        """Which of `token_ids` still authenticate at `now` (not revoked, not expired): one query for all of them."""
        if not token_ids:
            return set()
        statement = select(ApiToken.id, ApiToken.revoked_at, ApiToken.expires_at).where(ApiToken.id.in_(token_ids))
        return {
            row.id
            for row in (await self.session.execute(statement)).all()
            if row.revoked_at is None and (row.expires_at is None or row.expires_at > now)
        }

    async def page(
        self, state: str, search: str | None, limit: int, before_id: int | None, now: datetime
    ) -> Sequence[ApiToken]:
        """Newest first, at most `limit`, with an id below `before_id` when given: tokens in `state` (`active`:
        neither revoked nor expired at `now`; `expired`; `revoked`; `all`) whose name or first characters contain
        `search` (any case)."""
        statement = select(ApiToken).order_by(ApiToken.id.desc()).limit(limit)
        if before_id is not None:
            statement = statement.where(ApiToken.id < before_id)
        condition = _in_state(state, now)
        if condition is not None:
            statement = statement.where(condition)
        if search:
            needle = search.lower()
            statement = statement.where(
                or_(
                    func.lower(ApiToken.name).contains(needle, autoescape=True),
                    func.lower(ApiToken.display_prefix).contains(needle, autoescape=True),
                )
            )
        return (await self.session.scalars(statement)).all()

    async def add(self, token: ApiToken) -> ApiToken:
        self.session.add(token)
        await self.session.flush()
        return token

    async def flush(self) -> None:
        await self.session.flush()


def _in_state(state: str, now: datetime) -> ColumnElement[bool] | None:
    unexpired = or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now)
    if state == "active":
        return and_(ApiToken.revoked_at.is_(None), unexpired)
    if state == "expired":
        return and_(ApiToken.revoked_at.is_(None), ApiToken.expires_at <= now)
    if state == "revoked":
        return ApiToken.revoked_at.is_not(None)
    return None
