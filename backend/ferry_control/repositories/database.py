"""The database itself: whether it answers."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


class DatabaseRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def ping(self) -> None:
        """One round trip (`SELECT 1`); raises when the database does not answer."""
        await self.session.execute(text("SELECT 1"))
