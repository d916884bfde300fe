"""Service leases (`service_leases`): take or renew, give back, read. Each change is one conditional UPDATE, so it
is atomic on PostgreSQL (row lock; a concurrent UPDATE re-checks the condition once the first commits) and on
SQLite (the database write lock)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import ServiceLease


class LeaseRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def acquire(self, name: str, holder: str, ttl_s: float, now: datetime) -> bool:
        """Takes the lease for `holder` until `now + ttl_s`, or renews it when `holder` has it; True when
        `holder` holds it now. Refused (False) while another holder's lease has not expired."""
        result = await self.session.execute(
            update(ServiceLease)
            .where(
                ServiceLease.name == name,
                or_(ServiceLease.holder == holder, ServiceLease.holder.is_(None), ServiceLease.expires_at < now),
            )
            .values(holder=holder, expires_at=now + timedelta(seconds=ttl_s))
            .execution_options(synchronize_session=False)
        )
        return cast(CursorResult[Any], result).rowcount == 1

    async def release(self, name: str, holder: str) -> bool:
        """Frees the lease if `holder` has it, so another instance may take it at once (whatever its clock says);
        True when it did."""
        result = await self.session.execute(
            update(ServiceLease)
            .where(ServiceLease.name == name, ServiceLease.holder == holder)
            .values(holder=None, expires_at=None)
            .execution_options(synchronize_session=False)
        )
        return cast(CursorResult[Any], result).rowcount == 1

    async def get(self, name: str) -> ServiceLease | None:
        statement = select(ServiceLease).where(ServiceLease.name == name).execution_options(populate_existing=True)
        return await self.session.scalar(statement)
