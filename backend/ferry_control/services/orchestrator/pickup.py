"""A worker's pickup of the operations web processes accept: each is announced as a `pending` operation event
(relayed between processes) and launched here at once; a sweep every `operation_pickup_interval_s` launches any
pending operation whose announcement was missed (the worker was restarting, the relay was down), and stops the
operations running here whose cancellation a web process recorded (so a cancel takes effect within that period, not
at the next lease renewal). Of several workers, the runner's claim lets exactly one run each."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.background import BackgroundTask
from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.models import OperationState
from ferry_control.repositories.operations import OperationRepository
from ferry_control.schemas.events import OperationEvent
from ferry_control.services.event_bus import ClusterEvent, EventBus
from ferry_control.services.orchestrator.runner import OperationRunner

log = logging.getLogger(__name__)


class OperationPickup:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        runner: OperationRunner,
        bus: EventBus,
        settings: Settings,
    ):
        self._sessionmaker = sessionmaker
        self._runner = runner
        self._bus = bus
        self._interval_s = settings.operations.pickup_interval_s
        self._sweeper = BackgroundTask(self._sweep_forever, "ferry-operation-pickup")

    def start(self) -> None:
        self._bus.watchers.append(self._announced)
        self._sweeper.start()

    async def stop(self) -> None:
        if self._announced in self._bus.watchers:
            self._bus.watchers.remove(self._announced)
        await self._sweeper.stop()

    def _announced(self, event: ClusterEvent) -> None:
        if isinstance(event.data, OperationEvent) and event.data.state == OperationState.pending.value:
            self._runner.launch(event.data.operation_id)

    async def sweep(self) -> int:
        """Launches every pending operation not running here, and stops those running here whose cancellation was
        asked; returns how many were launched."""
        async with session_scope(self._sessionmaker) as session:
            pending = await OperationRepository(session).pending_ids()
            cancels = await OperationRepository(session).cancel_requested(self._runner.running)
        fresh = [i for i in pending if i not in self._runner.running]
        for operation_id in fresh:
            self._runner.launch(operation_id)
        for operation_id, requester in cancels.items():
            self._runner.cancel(operation_id, requester)
        return len(fresh)

    async def _sweep_forever(self) -> None:
        while True:
            try:
                if launched := await self.sweep():
                    log.info("picked up %d pending operation(s) without their announcement", launched)
            except Exception:
                log.warning("could not look for pending operations", exc_info=True)
            await asyncio.sleep(self._interval_s)  # a period, not a wait for a condition
