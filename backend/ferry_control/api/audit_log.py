"""GET /audit: the audit log, newest first."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query

from ferry_control.api.deps import CurrentToken, SessionDep
from ferry_control.schemas.audit import AuditEntryRead
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.services.audit import AuditService

router = APIRouter(tags=["audit"], responses=error_responses(401, 422))


@router.get("/audit", response_model=list[AuditEntryRead], summary="Audit log, newest first")
async def list_audit(
    session: SessionDep,
    _: CurrentToken,
    limit: int = Query(100, ge=1, le=1000),
    before_id: int | None = Query(None, ge=1, le=ID_MAX, description="Page back: entries with a smaller id."),
    cluster_id: int | None = Query(None, ge=1, le=ID_MAX),
    actor: str | None = Query(None, max_length=100),
    outcome: Literal["succeeded", "failed", "denied"] | None = None,
) -> list[AuditEntryRead]:
    entries = await AuditService(session).list(limit, before_id, cluster_id, actor, outcome)
    return [AuditEntryRead.model_validate(e) for e in entries]
