"""Operations: listing, lookup by id and by idempotency key, inserting."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import Operation, OperationState


class OperationRepository:
    def __init__(self, session: AsyncSession):
        self.session = session

    async def list_for_cluster(
        self,
        cluster_id: int,
        limit: int,
        before_id: int | None = None,
        *,
        types: Sequence[str] | None = None,
        dry_run: bool | None = None,
    ) -> Sequence[Operation]:
        """Newest first; `types` and `dry_run`, when given, keep only those operations."""
        statement = select(Operation).where(Operation.cluster_id == cluster_id)
        if before_id is not None:
            statement = statement.where(Operation.id < before_id)
        if types:
            statement = statement.where(Operation.type.in_(list(types)))
        if dry_run is not None:
            statement = statement.where(Operation.dry_run.is_(dry_run))
        return (await self.session.scalars(statement.order_by(Operation.id.desc()).limit(limit))).all()

    async def get(self, cluster_id: int, operation_id: int) -> Operation | None:
        operation = await self.session.get(Operation, operation_id)
        return operation if operation is not None and operation.cluster_id == cluster_id else None

    async def get_by_idempotency_key(self, cluster_id: int, requester: str, key: str) -> Operation | None:
        """The operation `requester` started with `key` (keys are per requester: another's never matches)."""
        statement = select(Operation).where(
            Operation.cluster_id == cluster_id, Operation.requester == requester, Operation.idempotency_key == key
        )
        return await self.session.scalar(statement)

    async def get_any(self, operation_id: int) -> Operation | None:
        """By id alone, read fresh from the database (an operation's runner reloads it)."""
        statement = select(Operation).where(Operation.id == operation_id).execution_options(populate_existing=True)
        return await self.session.scalar(statement)

    async def claim(self, operation_id: int, now: datetime) -> bool:
        """Marks a pending operation running, atomically: True for the one caller that did (of several processes
        that saw it pending, exactly one gets it)."""
        result = await self.session.execute(
            update(Operation)
            .where(Operation.id == operation_id, Operation.state == OperationState.pending)
            .values(state=OperationState.running, started_at=now)
            .execution_options(synchronize_session=False)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def pending_ids(self, limit: int = 100) -> list[int]:
        """Operations accepted and not yet claimed, oldest first."""
        statement = (
            select(Operation.id).where(Operation.state == OperationState.pending).order_by(Operation.id).limit(limit)
        )
        return list((await self.session.scalars(statement)).all())

    async def cancel_requested(self, ids: Collection[int]) -> dict[int, str]:
        """Of the operations `ids`, those still running whose cancellation was asked: id → who asked."""
        if not ids:
            return {}
        statement = select(Operation.id, Operation.cancel_requested_by).where(
            Operation.id.in_(list(ids)),
            Operation.state == OperationState.running,
            Operation.cancel_requested_by.is_not(None),
        )
        return {row.id: str(row.cancel_requested_by) for row in await self.session.execute(statement)}

    async def in_states(self, states: Collection[OperationState]) -> list[tuple[int, bool, datetime]]:
        """(id, dry_run, created_at) of every operation in one of `states`, by id (the reconciler's look)."""
        statement = select(Operation.id, Operation.dry_run, Operation.created_at).where(Operation.state.in_(states))
        return [
            (row.id, row.dry_run, row.created_at)
            for row in await self.session.execute(statement.order_by(Operation.id))
        ]

    async def latest_finished(self, cluster_id: int) -> Operation | None:
        """The cluster's newest operation that changed or could change something (no dry run) and has ended."""
        statement = (
            select(Operation)
            .where(Operation.cluster_id == cluster_id, Operation.dry_run.is_(False), Operation.finished_at.is_not(None))
            .order_by(Operation.id.desc())
            .limit(1)
        )
        return await self.session.scalar(statement)

    async def flush(self) -> None:
        await self.session.flush()

    async def add(self, operation: Operation) -> Operation:
        self.session.add(operation)
        await self.session.flush()
        return operation
