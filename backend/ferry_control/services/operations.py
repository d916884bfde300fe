"""Operations: list and read them, start one, and cancel a running one.

Starting takes the cluster's operation lock row (SELECT … FOR UPDATE, so concurrent requests — on any API instance —
are serialised), then: the same Idempotency-Key as an earlier request gives back that operation; a cluster held by
a running operation whose lease is alive is a 409 naming it, and one held by a dead holder's operation a 409
`operation_interrupted` until the reconciler has put the servers right and marked it interrupted; otherwise the
operation is inserted as pending, recorded as the lock's holder with a fresh lease and the next fencing token, and
launched in the background once the request's transaction has committed. Dry runs (preflight only) change nothing
and so do not take the cluster."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.db import after_commit
from ferry_control.core.errors import Conflict, NotFound
from ferry_control.core.naming import unknown_server
from ferry_control.models import Operation, OperationState
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.operation import OperationParams
from ferry_control.services.clusters import ClusterService
from ferry_control.services.orchestrator.runner import OperationRunner

ACTIVE_STATES = (OperationState.pending, OperationState.running)


class OperationService:
    def __init__(self, session: AsyncSession):
        self.session = session
        self.clusters = ClusterService(session)
        self.cluster_rows = ClusterRepository(session)
        self.servers = ServerRepository(session)
        self.operations = OperationRepository(session)

    async def list(
        self,
        cluster_id: int,
        limit: int,
        before_id: int | None = None,
        *,
        types: Sequence[str] | None = None,
        dry_run: bool | None = None,
    ) -> Sequence[Operation]:
        await self.clusters.get(cluster_id)
        return await self.operations.list_for_cluster(cluster_id, limit, before_id, types=types, dry_run=dry_run)

    async def get(self, cluster_id: int, operation_id: int) -> Operation:
        await self.clusters.get(cluster_id)
        operation = await self.operations.get(cluster_id, operation_id)
        if operation is None:
            raise NotFound(
                f"operation {operation_id} does not exist in cluster {cluster_id}", code="operation_not_found"
            )
        return operation

    async def cancel(self, runner: OperationRunner, cluster_id: int, operation_id: int, requester: str) -> Operation:
        """Asks a running operation to stop (as its other stops do; its failure's kind is `cancelled`): at once when
        this process runs it, else by the process running it at its next lease renewal (the request is recorded on
        its row). 409 `operation_not_running` when it is not pending or running."""
        operation = await self.get(cluster_id, operation_id)
        if operation.state not in ACTIVE_STATES:
            raise Conflict(
                f"operation {operation_id} ({operation.type}) is {operation.state.value}: only a running operation can "
                "be cancelled",
                code="operation_not_running",
                details={"operation_id": operation_id, "state": operation.state.value},
            )
        operation.cancel_requested_by = operation.cancel_requested_by or requester[:100]
        await self.operations.flush()

        def stop_here() -> None:
            runner.cancel(operation_id, requester)

        after_commit(self.session, stop_here)
        return operation

    async def start(
        self,
        runner: OperationRunner,
        settings: Settings,
        *,
        cluster_id: int,
        type_: str,
        params: OperationParams,
        dry_run: bool,
        requester: str,
        idempotency_key: str | None = None,
    ) -> tuple[Operation, bool]:
        """The operation (new, or the earlier one with this idempotency key) and whether it is new."""
        await self.clusters.get(cluster_id)
        stored = params.stored()
        for key, value in stored.items():
            if key.endswith("server_id") and value is not None and await self.servers.get(cluster_id, value) is None:
                raise NotFound(
                    f"{key} {value}: {unknown_server(value)} does not exist in cluster {cluster_id}",
                    code="server_not_found",
                )
        lock = await self.cluster_rows.lock_for_operation(cluster_id)
        if lock is None:
            # The lock row goes with its cluster: deleted since it was read above (once locked, a delete waits).
            raise NotFound(
                f"cluster {cluster_id} does not exist: it was deleted while the operation was being accepted",
                code="cluster_not_found",
            )
        if idempotency_key is not None:
            earlier = await self.operations.get_by_idempotency_key(cluster_id, requester, idempotency_key)
            if earlier is not None:
                if (earlier.type, earlier.params, earlier.dry_run) != (type_, stored, dry_run):
                    raise Conflict(
                        f"Idempotency-Key {idempotency_key!r} was used for operation {earlier.id} ({earlier.type}) "
                        "with other parameters; use a new key for a new request",
                        code="idempotency_key_reused",
                        details={"operation_id": earlier.id},
                    )
                return earlier, False
        now = datetime.now(UTC)
        if not dry_run and lock.operation_id is not None:
            holder = await self.operations.get_any(lock.operation_id)
            alive = lock.lease_expires_at is not None and lock.lease_expires_at > now
            if holder is not None and holder.state in ACTIVE_STATES:
                if alive:
                    raise Conflict(
                        f"cluster {cluster_id} is busy: operation {holder.id} ({holder.type}, requested by "
                        f"{holder.requester}) is {holder.state.value}; one operation per cluster at a time",
                        code="operation_running",
                        details={"operation_id": holder.id, "type": holder.type, "state": holder.state.value},
                    )
                # Its instance died mid-way: the servers may be half-moved. The reconciler (every instance, every
                # half lease) puts them right first; taking the cluster now would act on that half-moved state.
                raise Conflict(
                    f"cluster {cluster_id} is being reconciled: operation {holder.id} ({holder.type}) was left "
                    f"{holder.state.value} by an API instance that stopped; retry once it is marked interrupted",
                    code="operation_interrupted",
                    details={"operation_id": holder.id, "type": holder.type, "state": holder.state.value},
                )
        operation = await self.operations.add(
            Operation(
                cluster_id=cluster_id,
                type=type_,
                state=OperationState.pending,
                dry_run=dry_run,
                params=stored,
                steps=[],
                requester=requester,
                idempotency_key=idempotency_key,
            )
        )
        if not dry_run:
            lock.operation_id = operation.id
            lock.fencing_token += 1
            lock.acquired_at = now
            lock.lease_expires_at = now + timedelta(seconds=settings.operations.lease_s)
            await self.operations.flush()
        operation_id = operation.id
        after_commit(self.session, lambda: runner.accepted(cluster_id, operation_id, type_))
        return operation, True
