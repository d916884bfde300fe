"""GET /audit: the audit log, newest first, filtered by actor, action, cluster, server, outcome and time; each row
typed (a run, a dry run, another change, a refusal) with the operation it started and its old → new master."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter, Depends, Query

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.api.renamed_query import refuse_old_names
from ferry_control.core.errors import AppError
from ferry_control.schemas.audit import AuditEntryRead
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.services.audit import AuditService

router = APIRouter(tags=["audit"], responses=error_responses(400, 401, 422))


@router.get(
    "/audit",
    response_model=list[AuditEntryRead],
    summary="Audit log, newest first",
    dependencies=[Depends(refuse_old_names)],
)
async def list_audit(
    session: SessionDep,
    _: CurrentToken,
    limit: int = Query(100, ge=1, le=1000),
    before_id: int | None = Query(None, ge=1, le=ID_MAX, description="Page back: entries with a smaller id."),
    cluster_id: int | None = Query(None, ge=1, le=ID_MAX),
    registered_server_id: int | None = Query(
        None, ge=1, le=ID_MAX, description="Only calls about this registered server (the control plane's id)."
    ),
    actor: str | None = Query(None, max_length=100, description="Only this token's calls (its name)."),
    action: str | None = Query(
        None,
        max_length=100,
        description="Only this action (the route's name: switchover, create_token, update_cluster, …).",
    ),  # fmt: skip
    outcome: Literal["succeeded", "failed", "denied"] | None = None,
    since: datetime | None = Query(None, description="From this instant (inclusive; with a time zone)."),
    until: datetime | None = Query(None, description="Up to this instant (inclusive; with a time zone)."),
) -> list[AuditEntryRead]:
    for name, value in (("since", since), ("until", until)):
        if value is not None and value.tzinfo is None:
            raise AppError(f"{name} needs a time zone (e.g. 2026-11-28T13:00:00Z)", code="naive_datetime")
    if since is not None and until is not None and since > until:
        raise AppError(f"since ({since.isoformat()}) is after until ({until.isoformat()})", code="empty_range")
    service = AuditService(session)
    entries = await service.list(
        limit,
        before_id,
        cluster_id,
        actor,
        outcome,
        action=action,
        server_id=registered_server_id,
        since=since,
        until=until,
    )
    return await service.typed(entries)
