"""Rewind archives: stored once (by the rejoin that cut them), listed without their bytes, read one at a time."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import undefer

from ferry_control.models import RewindArchive


class RewindArchiveRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def add(self, archive: RewindArchive) -> RewindArchive:
        self.session.add(archive)
        await self.session.flush()
        return archive

    async def all(self, cluster_id: int) -> Sequence[RewindArchive]:
        """The cluster's archives, newest first, their bytes left unread."""
        statement = select(RewindArchive).where(RewindArchive.cluster_id == cluster_id)
        return (await self.session.scalars(statement.order_by(RewindArchive.id.desc()))).all()

    async def get(self, cluster_id: int, archive_id: int, *, content: bool = False) -> RewindArchive | None:
        statement = select(RewindArchive).where(RewindArchive.cluster_id == cluster_id, RewindArchive.id == archive_id)
        if content:
            statement = statement.options(undefer(RewindArchive.content))
        return await self.session.scalar(statement)
