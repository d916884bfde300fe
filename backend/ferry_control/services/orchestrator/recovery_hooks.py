"""Webhooks at every stage of an automatic recovery, as orchestrator's users expect (its OnFailureDetection,
PreFailover, PostFailover, PostUnsuccessfulFailover processes):

- `detected`: the failover monitor confirmed a lost source (the replicas lost it too), before anything is done —
  sent beside the recovery, never delaying it (`failure_detection_webhooks`);
- before and after the failover itself: the operation's `pre` and `post` webhooks (pre_/post_operation_webhooks);
- `not_recovered`: an automatic failover could not start (the cluster busy, the monitor refused) or ended without
  a new master (`recovery_failed_webhooks`).

Payloads carry ids, names, the reason and the time — no secrets. Outcomes are logged (the detection has no
operation to record them in); delivery follows the webhook policy of hooks.py."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.models import OperationState
from ferry_control.repositories.operations import OperationRepository
from ferry_control.schemas.registered_ids import stored_id
from ferry_control.services.orchestrator.hooks import call_webhooks

log = logging.getLogger(__name__)

#: Deliveries still under way (kept referenced until they end).
_deliveries: set[asyncio.Task[None]] = set()


def send_in_background(urls: list[str], payload: dict[str, Any], settings: Settings) -> None:
    """POSTs the payload to every URL beside the caller (bounded by webhook_timeout_s), logging the outcomes."""
    if not urls:
        return

    async def deliver() -> None:
        for outcome in await call_webhooks(urls, payload, settings):
            if not outcome.ok:
                log.warning(
                    "%s webhook %s failed: %s", payload.get("stage"), outcome.url, outcome.error or outcome.status
                )

    task = asyncio.get_running_loop().create_task(deliver())
    _deliveries.add(task)
    task.add_done_callback(_deliveries.discard)


def detected(settings: Settings, cluster_id: int, cluster: str, server_id: int, server: str, detail: str) -> None:
    send_in_background(settings.webhooks.failure_detection, {
        "stage": "detected", "cluster_id": cluster_id, "cluster": cluster, "registered_server_id": server_id,
        "server": server,
        "detail": detail, "at": datetime.now(UTC).isoformat(),
    }, settings)  # fmt: skip


def not_recovered(
    settings: Settings, cluster_id: int, server_id: int | None, reason: str, operation_id: int | None = None
) -> None:
    send_in_background(settings.webhooks.recovery_failed, {
        "stage": "not_recovered", "cluster_id": cluster_id, "registered_server_id": server_id,
        "operation_id": operation_id,
        "reason": reason, "at": datetime.now(UTC).isoformat(),
    }, settings)  # fmt: skip


class UnsuccessfulRecoveries:
    """An `OperationRunner.on_finish` callback: an automatic failover that ended without success calls the
    `not_recovered` webhooks with its error."""

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], settings: Settings):
        self._sessionmaker = sessionmaker
        self._settings = settings

    async def __call__(self, cluster_id: int, operation_id: int, state: OperationState) -> None:
        if state == OperationState.succeeded or not self._settings.webhooks.recovery_failed:
            return
        async with session_scope(self._sessionmaker) as session:
            operation = await OperationRepository(session).get_any(operation_id)
        if operation is None or operation.type != "failover" or not (operation.params or {}).get("automatic"):
            return
        source = stored_id(operation.params or {}, "source_registered_server_id")
        not_recovered(self._settings, cluster_id, source, f"failover {state.value}: {operation.error}", operation_id)
