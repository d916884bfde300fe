"""Drill schedules and runs: CRUD, the scheduler's claim of due schedules, the last run of a cluster."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import DrillRun, DrillSchedule
from ferry_control.schemas.registered_ids import stored_id


class DrillRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def schedules(self, cluster_id: int) -> Sequence[DrillSchedule]:
        statement = select(DrillSchedule).where(DrillSchedule.cluster_id == cluster_id).order_by(DrillSchedule.id)
        return (await self.session.scalars(statement)).all()

    async def schedule(self, cluster_id: int, schedule_id: int) -> DrillSchedule | None:
        schedule = await self.session.get(DrillSchedule, schedule_id)
        return schedule if schedule is not None and schedule.cluster_id == cluster_id else None

    async def schedule_by_name(self, cluster_id: int, name: str) -> DrillSchedule | None:
        statement = select(DrillSchedule).where(DrillSchedule.cluster_id == cluster_id, DrillSchedule.name == name)
        return await self.session.scalar(statement)

    async def claim_due(self, now: datetime, limit: int) -> Sequence[DrillSchedule]:
        """Enabled schedules due by `now`, locked for this transaction; rows another instance holds are skipped
        (FOR UPDATE SKIP LOCKED), so each due run is claimed once. (SQLite: the write transaction serialises.)"""
        statement = (
            select(DrillSchedule)
            .where(DrillSchedule.enabled.is_(True), DrillSchedule.next_run_at <= now)
            .order_by(DrillSchedule.next_run_at)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        return (await self.session.scalars(statement)).all()

    async def runs(self, cluster_id: int, limit: int, before_id: int | None = None) -> Sequence[DrillRun]:
        statement = select(DrillRun).where(DrillRun.cluster_id == cluster_id)
        if before_id is not None:
            statement = statement.where(DrillRun.id < before_id)
        return (await self.session.scalars(statement.order_by(DrillRun.id.desc()).limit(limit))).all()

    async def run(self, cluster_id: int, run_id: int) -> DrillRun | None:
        run = await self.session.get(DrillRun, run_id)
        return run if run is not None and run.cluster_id == cluster_id else None

    async def run_fresh(self, run_id: int | None) -> DrillRun | None:
        """The run as the database has it now (None: no such run, or no run asked for — a dry run's)."""
        if run_id is None:
            return None
        statement = select(DrillRun).where(DrillRun.id == run_id).execution_options(populate_existing=True)
        return await self.session.scalar(statement)

    async def last_candidate(self, cluster_id: int) -> int | None:
        """The candidate of the cluster's newest drill run that chose one (for rotation)."""
        statement = select(DrillRun).where(DrillRun.cluster_id == cluster_id).order_by(DrillRun.id.desc()).limit(20)
        for run in (await self.session.scalars(statement)).all():
            candidate = stored_id(run.details or {}, "candidate_registered_server_id")
            if candidate is not None:
                return int(candidate)
        return None

    async def add(self, row: DrillSchedule | DrillRun) -> None:
        self.session.add(row)
        await self.session.flush()

    async def delete(self, row: DrillSchedule) -> None:
        await self.session.delete(row)
        await self.session.flush()

    async def flush(self) -> None:
        await self.session.flush()
