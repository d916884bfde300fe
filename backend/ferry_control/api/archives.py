"""GET /clusters/{id}/archives: the rewind archives of a cluster (the transactions rejoins' rewinds cut from old
masters), and GET …/archives/{archive_id}: one archive's bytes, a binlog file of its server's kind. The rows hold
application data: operators and admins only (a viewer gets 403)."""

from __future__ import annotations

from fastapi import APIRouter, Path
from fastapi.responses import Response

from ferry_control.api.deps import OperatorToken, SessionDep
from ferry_control.schemas.common import ID_MAX, error_responses
from ferry_control.schemas.rewind_archive import RewindArchiveRead
from ferry_control.services.rewind_archives import RewindArchiveService

router = APIRouter(
    prefix="/clusters/{cluster_id}/archives", tags=["archives"], responses=error_responses(401, 403, 404, 422)
)

ClusterId = Path(ge=1, le=ID_MAX, description="The cluster's id.", examples=[1])
ArchiveId = Path(ge=1, le=ID_MAX, description="The archive's id.", examples=[1])


@router.get("", response_model=list[RewindArchiveRead], summary="List rewind archives")
async def list_archives(session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId) -> list[RewindArchiveRead]:
    return [RewindArchiveRead.model_validate(a) for a in await RewindArchiveService(session).all(cluster_id)]


@router.get(
    "/{archive_id}",
    summary="Download a rewind archive",
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}}, "description": "The archive's binlog file."}},
)
async def download_archive(
    session: SessionDep, _: OperatorToken, cluster_id: int = ClusterId, archive_id: int = ArchiveId
) -> Response:
    archive = await RewindArchiveService(session).get(cluster_id, archive_id)
    return Response(
        archive.content,
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{archive.name}"'},
    )
