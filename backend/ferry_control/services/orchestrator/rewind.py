"""A rejoin's rewind (`resolve: rewind`): the old master's transactions only it has are cut, archived first, so it
can rejoin as a replica.

The position (`target`): the server's binlog position with, per domain holding such transactions, the newest GTID
its binlog shares with the source (a domain with none is left out: cut whole). Before cutting, the server's own dry
run must cut nothing the source has (`preview`). The order (`rewind_and_archive`): the server archives the cut as a
binlog file as part of the rewind, so the archive is downloaded right after the rewind answers and stored (table
`rewind_archives`) before anything else changes; a download or store that fails ends the operation loudly, naming the
archive the server keeps — nothing is lost."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.drivers.base import RewindOutcome
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation_results import CutDomain, OnlyHereDomain, RejoinRewind
from ferry_control.services.orchestrator.failures import OperationFailed, refused
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.runner import OperationContext
from ferry_control.services.orchestrator.snapshot import ServerView
from ferry_control.services.rewind_archives import ARCHIVE_BYTES_MAX, RewindArchiveService


def target(server: ServerView, only_here: list[OnlyHereDomain], kept: dict[int, str | None]) -> str:
    """The position to rewind to (see the module); refused when a domain's listing does not reach what the source
    has (too many transactions only here, or the binlog no longer lists them)."""
    assert server.status is not None
    unknown = [d.domain for d in only_here if d.domain not in kept]
    if unknown:
        raise refused(
            f"nothing was changed: {server.info.label}'s binlog listing does not reach, in domain(s) "
            f"{', '.join(map(str, unknown))}, a transaction the source also has: the position to rewind to is not "
            'known here — rewind by hand (docs/operations.md, "DBA commands") or rebuild the server'
        )
    gtids = {g.domain: f"{g.domain}-{g.server}-{g.seq}" for g in position(server.status.positions.binlog)}
    for d in only_here:
        floor = kept[d.domain]
        if floor is None:
            gtids.pop(d.domain, None)
        else:
            gtids[d.domain] = floor
    return ",".join(gtids[d] for d in sorted(gtids))


def summary(to: str, outcome: RewindOutcome | None) -> RejoinRewind:
    cut = outcome.cut_by_domain() if outcome is not None else {}
    return RejoinRewind(to=to, cut=[CutDomain(domain=d, gtids=g) for d, g in sorted(cut.items())])


async def checked_dry_run(
    server: ServerView, to: str, only_here: list[OnlyHereDomain], is_only_here: Callable[[int, int, int], bool]
) -> RewindOutcome:
    """The server's own dry run of the rewind to `to`, refused unless it cuts only transactions the source lacks, in
    the domains listed, as many as listed where the count is known."""
    try:
        outcome = await server.require_driver().rewind(to, dry_run=True)
    except DriverError as e:
        raise refused(f"nothing was changed: {server.info.label} refuses a rewind to {to}: {e.message}") from e
    counts = {d.domain: d.count for d in only_here}
    cut = outcome.cut_by_domain()
    wrong = [t.gtid for t in outcome.cut if t.domain not in counts or not is_only_here(t.domain, t.server_id, t.seq_no)]
    if wrong:
        raise refused(
            f"nothing was changed: a rewind of {server.info.label} to {to} would cut {', '.join(wrong[:5])}, which the "
            "source has too"
        )
    for domain, count in counts.items():
        if count is not None and len(cut.get(domain, [])) != count:
            raise refused(
                f"nothing was changed: a rewind of {server.info.label} to {to} would cut {len(cut.get(domain, []))} "
                f"transaction(s) in domain {domain} where {count} are only here"
            )
    return outcome


async def preview(
    server: ServerView, to: str, only_here: list[OnlyHereDomain], is_only_here: Callable[[int, int, int], bool]
) -> RejoinRewind:
    """What the rewind would cut, as the server's dry run says — asked when it is read-only (a writable server's
    dry run is refused: it is asked again once the rejoin made it read-only, right before the rewind)."""
    assert server.status is not None
    if not server.status.read_only:
        return summary(to, None)
    return summary(to, await checked_dry_run(server, to, only_here, is_only_here))


def words(d: CutDomain) -> str:
    span = d.gtids[0] if len(d.gtids) == 1 else f"{d.gtids[0]} … {d.gtids[-1]}" if d.gtids else "nothing"
    return f"domain {d.domain}: {len(d.gtids)} transaction(s), {span}"


async def rewind_and_archive(
    ctx: OperationContext[Any, Any],
    server: ServerView,
    rewind: RejoinRewind,
    only_here: list[OnlyHereDomain],
    is_only_here: Callable[[int, int, int], bool],
) -> None:
    """The rewind (the server read-only already), then its archive downloaded and stored; `rewind` is filled in."""
    label = server.info.label
    driver = server.require_driver()
    async with ctx.step("rewind") as step:
        try:
            await checked_dry_run(server, rewind.to, only_here, is_only_here)
        except OperationFailed as e:
            # Nothing was cut; only read-only was set, if it was off.
            assert server.status is not None
            e.changed = not server.status.read_only
            e.left = [f"{label} is read-only (it was writable)"] if e.changed else []
            raise
        try:
            outcome = await driver.rewind(rewind.to, dry_run=False)
        except DriverError as e:
            raise OperationFailed(
                f"{label} refused or failed the rewind to {rewind.to}: {e.message}",
                changed=True,
                left=[f"{label} is read-only and replicates from nobody (the rewind's answer: {e.code})"],
            ) from e
        done = summary(rewind.to, outcome)
        rewind.cut, rewind.archive_name = done.cut, outcome.archive
        ctx.changed()
        step.detail = (
            f"{label} rewound to {rewind.to}, cutting " + "; ".join(words(d) for d in rewind.cut)
            + f"; its archive: {outcome.archive}"
        )  # fmt: skip
    if outcome.archive is None:
        return
    async with ctx.step("archive") as step:
        left_on_node = (
            f"the cut transactions are archived on {label} as {outcome.archive} (GET /v1/rewind/archives/"
            f"{outcome.archive}): nothing is lost, download it from there"
        )
        try:
            content = await driver.download_rewind_archive(outcome.archive, ARCHIVE_BYTES_MAX)
        except DriverError as e:
            raise OperationFailed(
                f"{label} was rewound but its archive {outcome.archive} could not be downloaded: {e.message} — "
                + left_on_node,
                changed=True,
                left=[f"{label} is rewound to {rewind.to}, read-only, replicating from nobody", left_on_node],
            ) from e
        try:
            async with session_scope(ctx.sessionmaker) as session:
                row = await RewindArchiveService(session).store(
                    cluster_id=ctx.cluster_id, server_id=server.info.id, server_label=label,
                    operation_id=ctx.operation_id, name=outcome.archive, cut=outcome.cut_by_domain(), content=content,
                )  # fmt: skip
                archive_id = row.id
        except Exception as e:  # noqa: BLE001 — any failure to keep it is said with where the archive is
            raise OperationFailed(
                f"{label} was rewound but its archive {outcome.archive} could not be stored: {e} — " + left_on_node,
                changed=True,
                left=[f"{label} is rewound to {rewind.to}, read-only, replicating from nobody", left_on_node],
            ) from e
        rewind.archive_id = archive_id
        ctx.changed()
        step.detail = f"archive {outcome.archive} ({len(content)} bytes) stored as archive {archive_id}"
