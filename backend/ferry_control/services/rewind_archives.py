"""Rewind archives: the binlog files of the transactions rejoins' rewinds cut, kept by the control plane. Stored
by the rejoin (`store`, bounded by `ARCHIVE_BYTES_MAX`), listed and downloaded through the API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import NotFound
from ferry_control.models import RewindArchive
from ferry_control.repositories.rewind_archives import RewindArchiveRepository
from ferry_control.services.clusters import ClusterService

#: The largest archive the control plane downloads and keeps (a larger one stays on its server alone: the rejoin
#: fails saying so before anything else changes).
ARCHIVE_BYTES_MAX = 64 * 1024 * 1024


class RewindArchiveService:
    def __init__(self, session: AsyncSession):
        self.session = session
        self.clusters = ClusterService(session)
        self.archives = RewindArchiveRepository(session)

    async def all(self, cluster_id: int) -> Sequence[RewindArchive]:
        await self.clusters.get(cluster_id)
        return await self.archives.all(cluster_id)

    async def get(self, cluster_id: int, archive_id: int) -> RewindArchive:
        """The archive with its bytes."""
        await self.clusters.get(cluster_id)
        archive = await self.archives.get(cluster_id, archive_id, content=True)
        if archive is None:
            raise NotFound(
                f"rewind archive {archive_id} does not exist in cluster {cluster_id}", code="rewind_archive_not_found"
            )
        return archive

    async def store(
        self,
        *,
        cluster_id: int,
        server_id: int,
        server_label: str,
        operation_id: int | None,
        name: str,
        cut: Mapping[int, Sequence[str]],
        content: bytes,
    ) -> RewindArchive:
        if len(content) > ARCHIVE_BYTES_MAX:
            raise ValueError(f"archive {name} is {len(content)} bytes, over the {ARCHIVE_BYTES_MAX}-byte bound")
        row = RewindArchive(
            cluster_id=cluster_id, server_id=server_id, server_label=server_label, operation_id=operation_id, name=name,
            cut=[{"domain": d, "gtids": list(g)} for d, g in sorted(cut.items())], size_bytes=len(content),
            content=content,
        )  # fmt: skip
        return await self.archives.add(row)
