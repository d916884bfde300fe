"""Live positions: the web process reads the GTID positions of the servers its open dashboards show every
`live_positions_interval_s` and sends each change to those dashboards' streams at once, as a `position` event —
instead of at the collector's pace (a poll every `poll_interval_s`, then the write, then the relay from the
worker), where a change waits half a poll interval on average before it is even seen.

Only positions, only of clusters with a stream open on this process, at most `live_positions_servers_max` servers
(the others move at the collector's pace); nothing is stored — the collector still records every position, health
and link, and nothing here decides anything. A server that does not answer in time, or answers nonsense, is skipped
until the next read; while a server is read here, the collector's `position` events for it are not sent to this
process's streams (they are not newer than what was sent), so a dashboard never sees a position go back. Reads of a
page (REST) still show what the collector stored: up to a poll interval behind the stream.

Measured (backend/bench/dashboards.py, docs/benchmarks.md): a position change reached an open dashboard in p50
555 ms with the collector's events alone at the default 1 s poll."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.background import BackgroundTask
from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.gtid import position
from ferry_control.drivers.base import ServerDriver
from ferry_control.drivers.factory import DriverFactory
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.events import PositionEvent
from ferry_control.services.event_bus import ClusterEvent

log = logging.getLogger(__name__)

#: How often the servers of the watched clusters are read again from the database (added, removed, moved).
TARGETS_REFRESH_S = 5.0
#: A server is "read here" (the collector's position events for it held back) while its last good read is at most
#: this many intervals old.
COVERED_INTERVALS = 3
#: The longest one read may take: a server slower than this is skipped this time.
READ_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class _Target:
    cluster_id: int
    server_id: int
    driver: ServerDriver


class LivePositions:
    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], drivers: DriverFactory, settings: Settings
    ) -> None:
        self._sessionmaker = sessionmaker
        self._drivers = drivers
        self.interval_s = settings.streams.live_positions_interval_s
        self._servers_max = settings.streams.live_positions_servers_max
        self._targets: list[_Target] = []
        self._targets_for: frozenset[int] = frozenset()
        self._targets_due = 0.0
        self._sent: dict[tuple[int, int], str] = {}  # (server, domain) → the gtid last sent
        self._read_at: dict[int, float] = {}  # server → loop time of its last good read
        self._watched: Callable[[], Collection[int]] = frozenset
        self._emit: Callable[[ClusterEvent], None] = lambda _: None
        self._background = BackgroundTask(self._run, "live-positions")

    @property
    def enabled(self) -> bool:
        return self.interval_s > 0 and self._servers_max > 0

    def start(self, watched: Callable[[], Collection[int]], emit: Callable[[ClusterEvent], None]) -> None:
        """Reads, every interval, the positions of the servers of the clusters `watched` names; `emit` gets each
        change."""
        if self.enabled:
            self._watched, self._emit = watched, emit
            self._background.start()

    async def stop(self) -> None:
        await self._background.stop()

    def covers(self, server_id: int) -> bool:
        """Whether the server's positions are sent from here now (read well within the last few intervals)."""
        read_at = self._read_at.get(server_id)
        if read_at is None:
            return False
        return asyncio.get_running_loop().time() - read_at <= COVERED_INTERVALS * self.interval_s

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                clusters = frozenset(self._watched())
                if clusters:
                    if clusters != self._targets_for or started >= self._targets_due:
                        await self._load_targets(clusters)
                        self._targets_due = started + TARGETS_REFRESH_S
                    for event in await self.read_once():
                        self._emit(event)
                elif self._targets:
                    self._forget()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database away for a moment: the collector's events still flow
                log.warning("live positions: this round failed", exc_info=True)
            await asyncio.sleep(max(0.0, self.interval_s - (loop.time() - started)))

    async def _load_targets(self, clusters: frozenset[int]) -> None:
        targets: list[_Target] = []
        async with session_scope(self._sessionmaker) as session:
            by_cluster = await ServerRepository(session).list_for_clusters(clusters, with_cluster=True)
            for cluster_id in sorted(by_cluster):
                for server in by_cluster[cluster_id]:
                    if len(targets) >= self._servers_max:
                        break
                    if server.admin_address is None:
                        continue
                    try:
                        driver = self._drivers.for_server(server, server.cluster)
                    except Exception:  # no usable credentials: its positions come from the collector
                        continue
                    targets.append(_Target(cluster_id, server.id, driver))
        self._targets = targets
        self._targets_for = clusters
        kept = {target.server_id for target in targets}
        self._sent = {key: gtid for key, gtid in self._sent.items() if key[0] in kept}
        self._read_at = {server: at for server, at in self._read_at.items() if server in kept}

    def _forget(self) -> None:
        self._targets, self._targets_for = [], frozenset()
        self._sent.clear()
        self._read_at.clear()

    async def read_once(self) -> list[ClusterEvent]:
        """One read of every target's positions; the changes since the last read as events."""
        results = await asyncio.gather(*(self._read(target) for target in self._targets))
        return [event for events in results for event in events]

    async def _read(self, target: _Target) -> list[ClusterEvent]:
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                positions = await target.driver.positions()
            current = position(positions.current)
        except asyncio.CancelledError:
            raise
        except Exception:  # slow, away or answering nonsense: the collector records why
            return []
        self._read_at[target.server_id] = asyncio.get_running_loop().time()
        events = []
        for gtid in current:
            text = f"{gtid.domain}-{gtid.server}-{gtid.seq}"
            if self._sent.get((target.server_id, gtid.domain)) == text:
                continue
            self._sent[(target.server_id, gtid.domain)] = text
            data = PositionEvent(registered_server_id=target.server_id, domain=gtid.domain, gtid=text, seq_no=gtid.seq)
            events.append(ClusterEvent.of(target.cluster_id, data))
        return events
