"""The audit trail: records one row per state-changing API call (with the server it concerned and the operation it
started), and lists them filtered, each typed (a run, a dry run, another change, a refusal) with its operation's
old → new master."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import AuditEntry, Operation
from ferry_control.repositories.audit import AuditRepository
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.audit import AuditEntryRead, AuditKind, AuditOperationRead
from ferry_control.schemas.registered_ids import stored_id


def outcome_for_status(status_code: int) -> str:
    if status_code in (401, 403):
        return "denied"
    return "succeeded" if status_code < 400 else "failed"


#: The audit path column's length: a longer path (a zero-padded id, say) is cut, never refused.
PATH_MAX = 500


class AuditService:
    def __init__(self, session: AsyncSession):
        self.entries = AuditRepository(session)
        self.clusters = ClusterRepository(session)
        self.servers = ServerRepository(session)

    async def record(
        self,
        *,
        actor: str | None,
        token_id: int | None,
        action: str,
        method: str,
        path: str,
        cluster_id: int | None,
        status_code: int,
        details: dict[str, Any],
        outcome: str | None = None,
        server_id: int | None = None,
    ) -> AuditEntry:
        """`server_id`: the server of the call's path, if one; the row names it by its label as it is now (a later
        rename or a reused id does not change what the row says). A handler's details may name the server it
        registered (`registered_server_id`) and the operation it started (`operation_id`): both are kept as columns
        too, for the filters and the link."""
        server_column = server_id if server_id is not None else _int(details.get("registered_server_id"))
        if cluster_id is not None and server_id is not None:
            server = await self.servers.get(cluster_id, server_id)
            if server is not None:
                details = {**details, "server": server.label}
        return await self.entries.add(
            AuditEntry(
                actor=None if actor is None else actor[:100],
                token_id=token_id,
                action=action[:100],
                method=method[:10],
                path=path if len(path) <= PATH_MAX else f"{path[: PATH_MAX - 1]}…",
                cluster_id=cluster_id,
                server_id=server_column,
                operation_id=_int(details.get("operation_id")),
                outcome=outcome or outcome_for_status(status_code),
                status_code=status_code,
                details=details,
            )
        )

    async def list(
        self,
        limit: int,
        before_id: int | None = None,
        cluster_id: int | None = None,
        actor: str | None = None,
        outcome: str | None = None,
        *,
        action: str | None = None,
        server_id: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> Sequence[AuditEntry]:
        """Newest first. For a cluster: only what was recorded since it was created — on SQLite a deleted cluster's
        id can be given to a new one, whose history must not begin with the old one's."""
        if cluster_id is not None:
            cluster = await self.clusters.get(cluster_id)
            if cluster is not None and (since is None or since < cluster.created_at):
                since = cluster.created_at
        return await self.entries.list(
            limit, before_id, cluster_id, actor, outcome, since, action=action, server_id=server_id, until=until
        )

    async def typed(self, entries: Sequence[AuditEntry]) -> builtins.list[AuditEntryRead]:
        """The rows as the API reads them: each typed, with the operation it started and that operation's old → new
        master by label (two queries for the whole page)."""
        operations = await self.entries.operations({e.operation_id for e in entries if e.operation_id is not None})
        servers = await self.entries.servers({o.cluster_id for o in operations.values()})
        labels = {server_id: server.label for server_id, server in servers.items()}
        reads = []
        for entry in entries:
            operation = operations.get(entry.operation_id) if entry.operation_id is not None else None
            if operation is not None and operation.cluster_id != entry.cluster_id:
                operation = None  # an id reused after its cluster was deleted (SQLite): not this row's
            read = AuditEntryRead.model_validate(entry)
            read.kind = audit_kind(entry, operation)
            read.operation = None if operation is None else operation_read(operation, labels)
            reads.append(read)
        return reads


def audit_kind(entry: AuditEntry, operation: Operation | None) -> AuditKind:
    if entry.outcome != "succeeded":
        return "refused"
    if operation is not None:
        return "dry_run" if operation.dry_run else "run"
    return "change"


def operation_read(operation: Operation, labels: dict[int, str]) -> AuditOperationRead:
    """The operation with its old and new master: its result's when it has them, else what it was asked (the master
    it expected, the candidate named)."""
    result, params = operation.result or {}, operation.params or {}
    old = _int(stored_id(result, "old_master_registered_server_id")) or _int(
        stored_id(params, "expected_master_registered_server_id")
    )
    new = _int(stored_id(result, "new_master_registered_server_id")) or _int(
        stored_id(params, "candidate_registered_server_id")
    )
    return AuditOperationRead(
        id=operation.id, type=operation.type, dry_run=operation.dry_run, state=operation.state.value,
        old_master=None if old is None else labels.get(old, f"server {old}"),
        new_master=None if new is None else labels.get(new, f"server {new}"),
    )  # fmt: skip


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
