"""What only an old master has, exported before its server is rebuilt (a rejoin's `resolve: rebuild`,
rejoin_rebuild.py archives it): the transactions the listing found, per domain, as a replayable SQL script the
server's driver exports (`export_transactions`: MariaDB's mariadb-binlog over the replication protocol), for kinds
that can (`exports_transactions`).

The range (`export_range`): per domain with such transactions, from the newest GTID its binlog shares with the source
(exclusive; `D-S-0` when it shares none) to its newest; from the oldest binlog file holding one of those on. A domain
whose listing did not reach a transaction the source has is refused: what to export is not known here."""

from __future__ import annotations

from dataclasses import dataclass

from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation_results import OnlyHereDomain
from ferry_control.services.orchestrator.failures import OperationFailed, refused
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.snapshot import ServerView
from ferry_control.services.rewind_archives import ARCHIVE_BYTES_MAX


@dataclass(frozen=True)
class ExportRange:
    after: str
    through: str
    first_file: str


def export_range(
    server: ServerView, only_here: list[OnlyHereDomain], kept: dict[int, str | None], files: dict[int, str]
) -> ExportRange:
    """The range to export (see the module), refused when a domain's listing does not reach what the source has."""
    assert server.status is not None
    unknown = [d.domain for d in only_here if d.domain not in kept or d.domain not in files]
    if unknown:
        raise refused(
            f"nothing was changed: {server.info.label}'s binlog listing does not reach, in domain(s) "
            f"{', '.join(map(str, unknown))}, a transaction the source also has: what only it has cannot be exported "
            "here — export it by hand from its binlog before rebuilding the server"
        )
    newest = {g.domain: g for g in position(server.status.positions.binlog)}
    after, through = [], []
    for d in only_here:
        top = newest[d.domain]
        through.append(f"{d.domain}-{top.server}-{top.seq}")
        after.append(kept[d.domain] or f"{d.domain}-{top.server}-0")
    return ExportRange(",".join(after), ",".join(through), min(files[d.domain] for d in only_here))


async def exported(server: ServerView, span: ExportRange) -> bytes:
    """What only `server` has in `span`, as its driver exports it (SQL); a failure ends the operation saying
    nothing of the server's data was changed."""
    try:
        return await server.require_driver().export_transactions(
            span.after, span.through, span.first_file, ARCHIVE_BYTES_MAX
        )
    except DriverError as e:
        raise OperationFailed(
            f"what only {server.info.label} has could not be exported ({e.code}): {e.message} — it is not rebuilt",
            kind="server_error",
            changed=False,
        ) from e
