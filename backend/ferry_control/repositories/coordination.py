"""The collector's recent cycles and SQLite's relayed events (models/coordination.py): written by the process that
made them, read by the others."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import CollectorCycleRow, RelayedEvent


class CycleRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def add(self, row: CollectorCycleRow, keep: int) -> None:
        """Stores a cycle and forgets all but the newest `keep`."""
        self.session.add(row)
        await self.session.flush()
        await self.session.execute(delete(CollectorCycleRow).where(CollectorCycleRow.id <= row.id - keep))

    async def newest(self, limit: int) -> list[CollectorCycleRow]:
        """The newest `limit` cycles, oldest first."""
        rows = await self.session.scalars(select(CollectorCycleRow).order_by(CollectorCycleRow.id.desc()).limit(limit))
        return list(reversed(rows.all()))


class RelayedEventRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def add(self, origin: str, payloads: Sequence[str]) -> None:
        self.session.add_all([RelayedEvent(origin=origin, payload=p) for p in payloads])

    async def last_id(self) -> int:
        return int(await self.session.scalar(select(func.coalesce(func.max(RelayedEvent.id), 0))) or 0)

    async def after(self, last_id: int, limit: int) -> list[RelayedEvent]:
        rows = await self.session.scalars(
            select(RelayedEvent).where(RelayedEvent.id > last_id).order_by(RelayedEvent.id).limit(limit)
        )
        return list(rows.all())

    async def forget_before(self, before: datetime) -> int:
        result = await self.session.execute(delete(RelayedEvent).where(RelayedEvent.created_at < before))
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
