"""Requests refused without an audit row each (an address past its failed-authentication limit) are counted per
client address and written as one audit row per address and interval: a flood cannot fill the audit log, and an
operator still sees who was refused, how often and when."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.services.audit import AuditService

log = logging.getLogger(__name__)

#: The audit row's action.
ACTION = "requests_refused_past_limit"
#: Most addresses tallied at once (an address beyond is counted in the `others` row).
ADDRESSES_MAX = 10_000


@dataclass
class _Tally:
    count: int = 0
    first: datetime = field(default_factory=lambda: datetime.now(UTC))
    last: datetime = field(default_factory=lambda: datetime.now(UTC))
    path: str = ""


class DenialTally:
    """Counts refusals per address until `flush` writes them (every `interval_s` while the app runs, and at its
    end)."""

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], interval_s: float = 60.0):
        self._sessionmaker = sessionmaker
        self.interval_s = interval_s
        self._tallies: dict[str, _Tally] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, client: str, path: str) -> None:
        if client not in self._tallies and len(self._tallies) >= ADDRESSES_MAX:
            client = "others"
        tally = self._tallies.setdefault(client, _Tally())
        tally.count += 1
        tally.last = datetime.now(UTC)
        tally.path = path

    async def flush(self) -> int:
        """Writes one audit row per address refused since the last flush; returns how many rows."""
        tallies, self._tallies = self._tallies, {}
        if not tallies:
            return 0
        async with session_scope(self._sessionmaker) as session:
            audit = AuditService(session)
            for client, tally in tallies.items():
                await audit.record(
                    actor=None, token_id=None, action=ACTION, method="*", path=tally.path, cluster_id=None,
                    status_code=429, outcome="denied",
                    details={"client": client[:100], "refused": tally.count, "first": tally.first.isoformat(),
                             "last": tally.last.isoformat(), "last_path": tally.path[:200]},
                )  # fmt: skip
        return len(tallies)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="denial-tally")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.flush()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)  # a period, not a wait for a condition
            try:
                await self.flush()
            except Exception:  # the database is down: counted again from now, said in the log
                log.exception("could not write the audit rows of refused requests")
