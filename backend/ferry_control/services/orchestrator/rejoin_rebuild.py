"""A rejoin that rebuilds (`resolve: rebuild`): a fenced former master with transactions only it has is rebuilt from a
donor instead of refused. Those transactions are never dropped unseen: before anything changes, the control plane
archives them into the rewind archive store (`rewind_archives`, read through GET …/archives) — as a replayable SQL
script of the transactions themselves where the kind exports them (only_here_export.py: MariaDB's mariadb-binlog),
else what its binlog tells of them (per domain their GTIDs, commit times, tables and rows, from the driver's
`recent_events`, as the listing found them) — then runs the rebuild's steps (rebuild.py): marked, replaced by a copy
of a donor's, replicating from the source, unmarked — which is its rejoin."""

from __future__ import annotations

import json
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.schemas.operation import RebuildParams
from ferry_control.schemas.operation_results import OnlyHereDomain, RebuildResult, RejoinResult
from ferry_control.services.orchestrator import rebuild
from ferry_control.services.orchestrator.failures import OperationFailed, refused
from ferry_control.services.orchestrator.only_here_export import ExportRange, exported
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView
from ferry_control.services.rewind_archives import RewindArchiveService


async def prepare(
    ctx: OperationContext[Any, Any], snapshot: ClusterSnapshot, server: ServerView, source: ServerView,
    result: RejoinResult,
) -> rebuild.Prepared:  # fmt: skip
    """The rebuild's preflight for the rejoining server (a refusal, nothing changed, when it cannot); its source must
    be the rejoin's."""
    result.rebuild = RebuildResult()
    prepared = await rebuild.prepare(ctx, snapshot, RebuildParams(registered_server_id=server.info.id), result.rebuild)
    if prepared.chosen.source.info.id != source.info.id:
        raise refused(
            f"a rebuild of {server.info.label} would replicate from {prepared.chosen.source.info.label}, not "
            f"{source.info.label}: name that source, or rebuild it (POST …/operations/rebuild); nothing was changed"
        )
    return prepared


def describe(prepared: rebuild.Prepared, server: ServerView) -> str:
    return rebuild.describe(prepared, RebuildParams(registered_server_id=server.info.id))


async def archive_and_rebuild(
    ctx: OperationContext[Any, Any], server: ServerView, only_here: list[OnlyHereDomain], prepared: rebuild.Prepared,
    result: RejoinResult, span: ExportRange | None,
) -> None:  # fmt: skip
    """`span`: the range to export as SQL (None: the kind does not export; the listing is archived)."""
    assert result.rebuild is not None
    label = server.info.label
    async with ctx.step("archive") as step:
        if span is not None:
            content = await exported(server, span)
            name = f"rejoin-{ctx.operation_id}-only-here.sql"
        else:
            content = json.dumps([d.model_dump(mode="json") for d in only_here], indent=1).encode()
            name = f"rejoin-{ctx.operation_id}-only-here.json"
        cut = {d.domain: [t.gtid for t in reversed(d.transactions)] for d in only_here}
        try:
            async with session_scope(ctx.sessionmaker) as session:
                row = await RewindArchiveService(session).store(
                    cluster_id=ctx.cluster_id, server_id=server.info.id, server_label=label,
                    operation_id=ctx.operation_id, name=name, cut=cut, content=content,
                )  # fmt: skip
                result.rebuild_archive_id = row.id
        except Exception as e:  # noqa: BLE001 — nothing is rebuilt without the archive kept
            raise OperationFailed(
                f"the transactions only {label} has could not be archived ({e}): it is not rebuilt", changed=False
            ) from e
        what = "its transactions only it has, as SQL" if span else "what its binlog tells of them"
        step.detail = (
            f"{what} ({len(content)} bytes) stored as archive {result.rebuild_archive_id} ({name}); the rebuild "
            f"drops them from {label}"
        )
    await rebuild.rebuild_steps(ctx, prepared, RebuildParams(registered_server_id=server.info.id), result.rebuild)
