"""One named service lease as this API instance sees it: take or renew it, give it back, and what it knows of the
holder. With several instances on one database the lease picks the one that does a job (the collector's polling);
each attempt is a conditional UPDATE in the database (repositories/leases.py), so two instances never both get it.

Times are this instance's clock, as for the operation lock's lease: instances' clocks must agree to well within
the lease's time to live (NTP)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.repositories.leases import LeaseRepository


class Lease:
    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], name: str, instance_id: str, ttl_s: float):
        self._sessionmaker = sessionmaker
        self.name = name
        self.instance_id = instance_id
        self.ttl_s = ttl_s
        #: Whether this instance held the lease at its last attempt.
        self.held = False
        #: The holder seen at the last attempt (this instance when it holds it; None when the lease was free).
        self.holder: str | None = None

    async def acquire(self, now: datetime | None = None) -> bool:
        """Takes or renews the lease in a transaction of its own; True when this instance holds it."""
        try:
            async with session_scope(self._sessionmaker) as session:
                held = await self._attempt(session, now or datetime.now(UTC))
        except BaseException:
            self.held = False  # unknown: this instance must not act as the holder
            raise
        return held

    async def renew_in(self, session: AsyncSession, now: datetime | None = None) -> bool:
        """Renews the lease inside the caller's transaction, which so commits only while this instance holds it
        (on PostgreSQL the lease's row stays locked until then). False: another instance took it."""
        return await self._attempt(session, now or datetime.now(UTC))

    async def _attempt(self, session: AsyncSession, now: datetime) -> bool:
        repository = LeaseRepository(session)
        held = await repository.acquire(self.name, self.instance_id, self.ttl_s, now)
        if held:
            holder: str | None = self.instance_id
        else:
            row = await repository.get(self.name)
            holder = row.holder if row is not None else None
        self.held, self.holder = held, holder
        return held

    async def release(self) -> bool:
        """Gives the lease back if this instance holds it (whatever `held` says: an attempt cut short may have
        taken it), so another instance may take it at once; True when it did."""
        async with session_scope(self._sessionmaker) as session:
            released = await LeaseRepository(session).release(self.name, self.instance_id)
        self.held, self.holder = False, None
        return released
