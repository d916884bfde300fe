"""Operations that follow another: when a failover promoted a `prefer_not` server because it alone could take over
at once (see `candidates`), the role moves on to the better candidate it named (`role_moves_to_registered_server_id`)
by a switchover started as soon as the failover has ended and released the cluster. The failover's result records the
follow-up's id (`follow_up_operation_id`), or why it could not start (`follow_up_error`)."""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.errors import AppError
from ferry_control.core.naming import unknown_server
from ferry_control.models import OperationState
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.operation import SwitchoverParams
from ferry_control.schemas.operation_results import FailoverResult
from ferry_control.services.operations import OperationService
from ferry_control.services.orchestrator.runner import OperationRunner

log = logging.getLogger(__name__)


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
            if operation is None or operation.dry_run or operation.type != "failover":
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
