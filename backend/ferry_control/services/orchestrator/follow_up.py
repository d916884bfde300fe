"""Operations that follow another, started as soon as the first has ended and released the cluster:

- when a failover promoted a `prefer_not` server because it alone could take over at once (see `candidates`), the
  role moves on to the better candidate it named (`role_moves_to_registered_server_id`) by a switchover; the
  failover's result records the follow-up's id (`follow_up_operation_id`), or why it could not start
  (`follow_up_error`);
- after a rejoin or a rebuild that succeeded (`operations.verify_after_rejoin`), a consistency check of the server
  against its source; the rejoin's or rebuild's result records its id (`consistency_check_operation_id`), or why it
  could not start (`consistency_check_error`)."""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.errors import AppError
from ferry_control.core.naming import unknown_server
from ferry_control.models import Operation, OperationState
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.operation import ConsistencyCheckParams, SwitchoverParams
from ferry_control.schemas.operation_results import FailoverResult, RebuildResult, RejoinResult
from ferry_control.services.operations import OperationService
from ferry_control.services.orchestrator.runner import OperationRunner

log = logging.getLogger(__name__)

#: The kinds after which the server they brought back is checked against its source, and their result models.
RESULTS: dict[str, type[RejoinResult] | type[RebuildResult]] = {"rejoin": RejoinResult, "rebuild": RebuildResult}
VERIFIED_AFTER = frozenset(RESULTS)


class FollowUps:
    """An `OperationRunner.on_finish` callback starting the switchover a finished failover asked for."""

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], runner: OperationRunner, settings: Settings):
        self._sessionmaker = sessionmaker
        self._runner = runner
        self._settings = settings

    async def __call__(self, cluster_id: int, operation_id: int, state: OperationState) -> None:
        if state != OperationState.succeeded:
            return
        async with session_scope(self._sessionmaker) as session:
            operation = await OperationRepository(session).get_any(operation_id)
            if operation is None or operation.dry_run:
                return
            if operation.type in VERIFIED_AFTER:
                if self._settings.operations.verify_after_rejoin:
                    await self._verify(session, cluster_id, operation)
                return
            if operation.type != "failover":
                return
            result = FailoverResult.model_validate(operation.result or {})
            successor = result.role_moves_to_registered_server_id
            if successor is None:
                return
            try:
                async with session.begin_nested():
                    follow_up, _ = await OperationService(session).start(
                        self._runner,
                        self._settings,
                        cluster_id=cluster_id,
                        type_="switchover",
                        params=SwitchoverParams(
                            candidate_registered_server_id=successor,
                            expected_master_registered_server_id=result.new_master_registered_server_id,
                        ),
                        dry_run=False,
                        requester=f"failover {operation_id} (promotion rules)",
                    )
                result.follow_up_operation_id = follow_up.id
                log.info("failover %s promoted a prefer_not server: switchover %s moves the role to id %s",
                         operation_id, follow_up.id, successor)  # fmt: skip
            except AppError as e:
                named = await ServerRepository(session).get(cluster_id, successor)
                label = named.label if named is not None else unknown_server(successor)
                result.follow_up_error = f"the switchover to {label} could not start: {e.message}"
                log.warning("failover %s: %s", operation_id, result.follow_up_error)
            operation.result = result.stored()

    async def _verify(self, session: AsyncSession, cluster_id: int, operation: Operation) -> None:
        """Starts the consistency check of the server a rejoin or rebuild brought back, and records it (or why it
        could not start) on that operation's result."""
        result = RESULTS[operation.type].model_validate(operation.result or {})
        server_id = result.registered_server_id
        if server_id is None:
            return
        try:
            async with session.begin_nested():
                check, _ = await OperationService(session).start(
                    self._runner,
                    self._settings,
                    cluster_id=cluster_id,
                    type_="consistency_check",
                    params=ConsistencyCheckParams(
                        registered_server_id=server_id,
                        chunk_rows=self._settings.operations.verify_chunk_rows,
                    ),
                    dry_run=False,
                    requester=f"{operation.type} {operation.id} (verify_after_rejoin)",
                )
            result.consistency_check_operation_id = check.id
            log.info("%s %s: consistency check %s started", operation.type, operation.id, check.id)
        except AppError as e:
            result.consistency_check_error = f"the consistency check could not start: {e.message}"
            log.warning("%s %s: %s", operation.type, operation.id, result.consistency_check_error)
        operation.result = result.stored()
