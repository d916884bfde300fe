"""The drill scheduler: every `drill_scheduler_interval_s`, claims the schedules that are due and starts their runs.

Safe with several API instances: due schedules are claimed with SELECT … FOR UPDATE SKIP LOCKED and moved to their
next run time in the same transaction that starts the run, so each due time is run once. A run that cannot start
because the cluster is busy is recorded as failed with that reason (and its webhooks are called): a skipped drill is
loud too."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.background import BackgroundTask
from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.errors import Conflict
from ferry_control.core.metrics import Metrics
from ferry_control.models import DrillRun
from ferry_control.repositories.drills import DrillRepository
from ferry_control.services.drills import DrillService, next_runs, plan_of
from ferry_control.services.orchestrator.hooks import call_webhooks
from ferry_control.services.orchestrator.runner import OperationRunner

log = logging.getLogger(__name__)
#: Most schedules claimed per tick.
CLAIM_BATCH_MAX = 20
REQUESTER = "scheduler"


class DrillScheduler:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        runner: OperationRunner,
        settings: Settings,
        metrics: Metrics,
    ):
        self._sessionmaker = sessionmaker
        self._runner = runner
        self._settings = settings
        self._metrics = metrics
        self._background = BackgroundTask(self._run_forever, "ferry-drill-scheduler")

    def start(self) -> None:
        self._background.start()

    async def stop(self) -> None:
        await self._background.stop()

    async def _run_forever(self) -> None:
        while True:
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("drill scheduler tick failed")
            await asyncio.sleep(self._settings.drills.scheduler_interval_s)

    async def tick(self, now: datetime | None = None) -> list[int]:
        """Starts every due run; returns the ids of the drill runs it created."""
        now = now or datetime.now(UTC)
        created: list[int] = []
        busy: list[tuple[int, int, str, str | None]] = []
        async with session_scope(self._sessionmaker) as session:
            repository = DrillRepository(session)
            for schedule in await repository.claim_due(now, CLAIM_BATCH_MAX):
                upcoming = next_runs(schedule.cron, schedule.timezone, now, 1)
                schedule.next_run_at = upcoming[0] if upcoming else None
                schedule.last_run_at = now
                try:
                    async with session.begin_nested():
                        run = await DrillService(session).start(
                            self._runner, self._settings, schedule.cluster_id, plan_of(schedule), REQUESTER, schedule.id
                        )
                    created.append(run.id)
                except Conflict as e:
                    failed = DrillRun(
                        cluster_id=schedule.cluster_id, schedule_id=schedule.id, requester=REQUESTER, state="failed",
                        passed=False, reasons=[f"not run: {e.message}"], details={}, finished_at=now,
                    )  # fmt: skip
                    await repository.add(failed)
                    created.append(failed.id)
                    busy.append((failed.id, schedule.cluster_id, e.message, schedule.webhook_url))
        for run_id, cluster_id, reason, url in busy:
            self._metrics.drill_runs.labels("failed").inc()
            urls = [*self._settings.webhooks.drill_failure, *([url] if url else [])]
            payload = {"event": "drill_failed", "drill_run_id": run_id, "cluster_id": cluster_id,
                       "reasons": [f"not run: {reason}"]}  # fmt: skip
            await call_webhooks(urls, payload, self._settings)
        return created
