"""The end of a maintenance that reached its `until`, recorded: after each collector cycle, every server whose
maintenance expired is cleared, with an audit row (`maintenance_expired`, no actor: the control plane) and a
`maintenance` event (`by: expiry`) so open dashboards refresh.

This only records the end. Whether a server is in maintenance is always computed (`Server.maintenance`: set and
`until` not reached), so an expired maintenance no longer counts the instant it expires — for candidate choice, the
failover monitor and every read — whether this ran or not (a worker down or late changes nothing but when the audit
row appears). Each clear is a conditional update (still set, still expired), so a maintenance an operator started
again in the meantime is never cleared."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.models.base import utcnow
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.events import MaintenanceEvent
from ferry_control.services.audit import AuditService
from ferry_control.services.event_bus import ClusterEvent, EventBus

log = logging.getLogger(__name__)


class MaintenanceExpiry:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], bus: EventBus):
        self._sessionmaker = sessionmaker
        self._bus = bus

    async def __call__(self, clusters: set[int] | None = None) -> int:
        """Clears the expired maintenances of `clusters` (None: every cluster); returns how many."""
        return await self.sweep(clusters)

    async def sweep(self, clusters: set[int] | None = None, now: datetime | None = None) -> int:
        now = now or utcnow()
        events: list[ClusterEvent] = []
        async with session_scope(self._sessionmaker) as session:
            servers = ServerRepository(session)
            for server in await servers.maintenances_expired(now, clusters):
                until, owner, reason = server.maintenance_until, server.maintenance_owner, server.maintenance_reason
                assert until is not None
                if not await servers.end_maintenance_if_until(server.id, until):
                    continue  # started again meanwhile
                await AuditService(session).record(
                    actor=None, token_id=None, action="maintenance_expired", method="-",
                    path=f"/api/v1/clusters/{server.cluster_id}/servers/{server.id}/maintenance",
                    cluster_id=server.cluster_id, server_id=server.id, status_code=200,
                    details={"maintenance": False, "owner": owner, "reason": reason, "until": until.isoformat()},
                )  # fmt: skip
                log.info("maintenance of %s ended by itself at %s (%s, set by %s)", server.label, until, reason, owner)
                data = MaintenanceEvent(registered_server_id=server.id, maintenance=False, by="expiry", owner=owner,
                                        reason=reason, until=until)  # fmt: skip
                events.append(ClusterEvent.of(server.cluster_id, data))
        for event in events:  # after the commit
            self._bus.publish(event)
        return len(events)
