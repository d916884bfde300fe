"""Rejoin: a fenced former master (replaced by a failover) brought back as a read-only replica of the new master —
by an operator's action, or by the failover monitor when the cluster's `auto_rejoin` is on and the server answers
again.

Its GTIDs are compared with the source's per domain, from both binlog states (`gtid.errant_gtids`): a transaction
only it has — acknowledged to a client before it was replaced and never replicated, what the failover's RPO paid —
is never silently dropped or replayed elsewhere: the rejoin then changes nothing and lists them per domain (count,
first and last GTID, and the newest ones with their commit time, tables and rows as its binlog tells them). With
nothing only it has, it replicates from the source with `current_pos` (its own binlog is folded into its position),
over the connection name its cluster's replicas of that source use (else the setting), with a sibling replica's
connection settings (semi-sync replica side, parallel apply; never a delay or filters), stays read-only, and is no
longer fenced once it replicates.

Asked to rewind (`resolve: rewind`), a server with transactions only it has is rewound before it rejoins (module
`rewind`): per domain to the last GTID the source also has — the node's own dry run must cut exactly what the listing
found —, its archive of the cut downloaded and stored right after the rewind answers, before anything else changes
(a download or store that fails ends the operation naming the archive the server keeps)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ferry_control.core.db import session_scope
from ferry_control.drivers.base import ConnectionSettings
from ferry_control.drivers.errors import DriverError
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.operation import RejoinParams
from ferry_control.schemas.operation_results import OnlyHereDomain, OnlyHereTransaction, RejoinResult
from ferry_control.services.orchestrator import actions, rejoin_rebuild
from ferry_control.services.orchestrator import rewind as rewinding
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.gtid import errant_gtids, parse_state, position
from ferry_control.services.orchestrator.only_here_export import ExportRange, export_range
from ferry_control.services.orchestrator.rebuild_mark import is_rebuild_mark
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView
from ferry_control.services.orchestrator.writable import withdraw_writable

#: Transactions listed per domain (the newest; the count says how many there are).
LISTED_MAX = 50
#: Binlog transactions read per domain to find them.
EVENTS_READ_MAX = 500

Rejoin = OperationContext[RejoinParams, RejoinResult]


async def run_rejoin(ctx: Rejoin) -> None:
    await rejoin(ctx, ctx.params, ctx.result)


async def rejoin(
    ctx: OperationContext[Any, Any], params: RejoinParams, result: RejoinResult, *, hooks: bool = True
) -> None:
    """The rejoin's steps, recording into `result`: the operation's, or a failover drill's rejoin of the master it
    failed over (`hooks` off: the drill called the pre-operation webhooks before its failover)."""
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        server = snapshot.by_id.get(params.registered_server_id)
        if server is None:
            raise refused(f"no server with id {params.registered_server_id} in this cluster")
        if not server.reachable or server.status is None:
            raise refused(f"{server.info.label} does not answer: {server.error}")
        if is_rebuild_mark(server.info.fence_reason):
            raise refused(
                f"{server.info.label} is marked by a rebuild that did not complete ({server.info.fence_reason}): its "
                "data may be incomplete; rebuild it again instead; nothing was changed"
            )
        if snapshot.links_of(server.info.id):
            raise refused(f"{server.info.label} replicates already: there is nothing to rejoin")
        if snapshot.replicas_of(server.info.id):
            raise refused(f"{server.info.label} has replicas of its own: it is a source, not a lost master")
        if not server.info.fenced and not server.status.read_only:
            raise refused(
                f"{server.info.label} is neither fenced nor read-only: it takes writes, so it is a master, not one "
                "to rejoin"
            )
        source = choose_source(snapshot, server, params.master_registered_server_id)
        result.registered_server_id, result.master_registered_server_id = server.info.id, source.info.id
        kept: dict[int, str | None] = {}
        files: dict[int, str] = {}
        only_here = await transactions_only_here(server, source, kept, files)
        result.only_here = only_here
        prepared = None
        span: ExportRange | None = None
        if only_here and params.resolve == "rebuild":
            prepared = await rejoin_rebuild.prepare(ctx, snapshot, server, source, result)
            if server.require_driver().exports_transactions:
                span = export_range(server, only_here, kept, files)
        elif only_here and params.resolve == "rewind":
            to = rewinding.target(server, only_here, kept)
            result.rewind = await rewinding.preview(server, to, only_here, only_here_rule(server, source))
        elif only_here:
            raise refused(
                f"nothing was changed: {server.info.label} has transactions {source.info.label} never had — "
                + "; ".join(_words(d) for d in only_here)
                + " — they were acknowledged before it was replaced and never replicated; it rejoins once they are "
                'dealt with: rejoin it with resolve "rewind" (ferryctl rejoin --rewind) to cut them, archived '
                'first, or with resolve "rebuild" to rebuild it from a donor, what its binlog tells of them archived '
                "first"
            )
        name, settings = follower_conventions(snapshot, source, ctx.settings.operations.replication_connection_name)
        result.connection = name
        if prepared is not None:
            step.detail = (
                f"{server.info.label} has transactions {source.info.label} never had — "
                + "; ".join(_words(d) for d in only_here)
                + " — archived by the control plane first; then "
                + rejoin_rebuild.describe(prepared, server)
            )
        else:
            step.detail = (
                f"{server.info.label} has nothing {source.info.label} lacks in any domain; it will replicate from "
                f"{source.info.label} over {name!r} (current_pos)"
                if result.rewind is None
                else f"{server.info.label} will be rewound to {result.rewind.to}, cutting "
                + (
                    "; ".join(rewinding.words(d) for d in result.rewind.cut)
                    or "what only it has (its own dry run runs once it is read-only)"
                )
                + f" (archived first); then it will replicate from {source.info.label} over {name!r} (current_pos)"
            )
    if ctx.dry_run:
        return
    if hooks:
        await ctx.pre_hooks(
            old_master_registered_server_id=server.info.id, new_master_registered_server_id=source.info.id
        )
    if prepared is not None:
        await rejoin_rebuild.archive_and_rebuild(ctx, server, only_here, prepared, result, span)
        return
    address = source.info.protocol_address
    assert address is not None
    driver = server.require_driver()
    async with ctx.step("read_only") as step:
        if not await driver.set_read_only(True):
            # Writable before, it stays so: nothing changed. Read-only before, its answer contradicts that: unknown.
            raise OperationFailed(
                f"{server.info.label} still reports read_only off", changed=None if server.status.read_only else False
            )
        step.detail = f"{server.info.label} is read-only"
    if result.rewind is not None:
        await rewinding.rewind_and_archive(ctx, server, result.rewind, only_here, only_here_rule(server, source))
    async with ctx.step("replicate") as step:
        exists = name in await actions.connection_names(driver)
        await actions.repoint(driver, name, address, "current_pos", stop_first=exists, settings=settings)
        step.detail = f"{server.info.label} replicates from {source.info.label} ({address}) over {name!r}"
    async with ctx.step("verify") as step:
        target = position((await source.require_driver().positions()).binlog)
        lagging: dict[int, str] = {}
        problems = await actions.wait_replicating_from(
            [server], address, target, ctx.settings.operations.verify_timeout_s, lagging=lagging
        )
        if problems:
            problem = problems[server.info.id]
            left = [f"{server.info.label} replicates from {source.info.label} over {name!r}, not following: {problem}"]
            if not server.status.read_only:
                left.append(f"{server.info.label} is read-only (it was writable)")
            raise OperationFailed(
                f"{server.info.label} does not follow {source.info.label}: {problem}",
                changed=True,
                left=left,
            )
        step.detail = lagging.get(server.info.id) or f"{server.info.label} reached {target}"
    async with ctx.step("unfence") as step:
        async with session_scope(ctx.sessionmaker) as session:
            row = await ServerRepository(session).get(ctx.cluster_id, server.info.id)
            if row is not None:
                row.fenced, row.fenced_at, row.fence_reason = False, None, None
        # A plain replica again: writable domains an operation recorded when it made it a master go.
        withdrawn = await withdraw_writable(ctx, server.info.id)
        step.detail = f"{server.info.label} is a replica of {source.info.label} again; no longer fenced" + (
            f"; the writable domains recorded when it was promoted ({', '.join(map(str, withdrawn))}) withdrawn"
            if withdrawn
            else ""
        )


def choose_source(snapshot: ClusterSnapshot, server: ServerView, wanted: int | None) -> ServerView:
    """The source to follow: the one named, else the cluster's one writable master that replicates from nobody."""
    if wanted is not None:
        source = snapshot.by_id.get(wanted)
        if source is None or not source.reachable:
            raise refused(f"the source {snapshot.label_of(wanted)} does not answer")
    else:
        roots = [
            v for v in snapshot.views
            if v is not server and v.reachable and v.status is not None and not v.status.read_only
            and not snapshot.links_of(v.info.id)
        ]  # fmt: skip
        if len(roots) != 1:
            found = ", ".join(v.info.label for v in roots) or "none"
            raise refused(
                f"the cluster has {len(roots)} writable master(s) replicating from nobody ({found}): name the source "
                "(master_registered_server_id)"
            )
        source = roots[0]
    if source.info.protocol_address is None:
        raise refused(f"{source.info.label} has no protocol port recorded")
    return source


def follower_conventions(
    snapshot: ClusterSnapshot, source: ServerView, default_name: str
) -> tuple[str, ConnectionSettings | None]:
    """The connection name the source's replicas use (else the setting's) and a sibling's connection settings
    without its delay or filters (None when it has no replica to copy)."""
    siblings = [link for link in snapshot.replicas_of(source.info.id) if link.connection.settings is not None]
    plain = [link for link in siblings if not link.connection.settings or not link.connection.settings.delay_s]
    names = {link.connection.name for link in snapshot.replicas_of(source.info.id)}
    name = next(iter(names)) if len(names) == 1 else default_name
    models = plain or siblings
    if not models or models[0].connection.settings is None:
        return name, None
    return name, replace(models[0].connection.settings, delay_s=0, filters={})


async def transactions_only_here(
    server: ServerView,
    source: ServerView,
    kept: dict[int, str | None] | None = None,
    files: dict[int, str] | None = None,
) -> list[OnlyHereDomain]:
    """Per domain, the transactions `server` has and `source` does not (see the module). Into `kept`, per such domain
    whose listing is whole: the newest GTID of `server`'s binlog the source also has (None: none listed); into
    `files`, per such domain, the binlog file holding that GTID (else its oldest transaction only here): where they
    start."""
    assert server.status is not None and source.status is not None
    mine, theirs = server.status.positions, source.status.positions
    errant = errant_gtids(
        candidate_binlog_pos=mine.binlog,
        candidate_binlog_state=mine.binlog_state,
        candidate_server_id=server.status.server_id,
        master_binlog_pos=theirs.binlog,
        master_binlog_state=theirs.binlog_state,
    )
    if not errant:
        return []
    is_only_here = only_here_rule(server, source)
    found = []
    for e in errant:
        domain = e.domain
        listed: list[OnlyHereTransaction] = []
        count = 0
        reached_floor = False
        floor: str | None = None
        listing_ended = False
        oldest_file: str | None = None
        try:
            before: int | None = None
            while count < EVENTS_READ_MAX:
                page = await server.require_driver().recent_events(min(100, EVENTS_READ_MAX), domain, before)
                for t in page.transactions:
                    if t.file is not None:
                        oldest_file = t.file
                    if is_only_here(t.domain, t.server_id, t.seq_no):
                        count += 1
                        if len(listed) < LISTED_MAX:
                            listed.append(
                                OnlyHereTransaction(
                                    gtid=t.gtid, commit_ts_us=t.commit_ts_us, tables=list(t.tables), rows=t.rows
                                )
                            )
                    else:
                        reached_floor, floor = True, t.gtid
                        break
                if reached_floor or page.next_before is None:
                    listing_ended = not reached_floor and page.next_before is None
                    break
                before = page.next_before
        except DriverError:
            listed, count, reached_floor, listing_ended = [], 0, False, False
        if kept is not None and (reached_floor or listing_ended):
            kept[domain] = floor
            if files is not None and oldest_file is not None:
                files[domain] = oldest_file
        first = listed[-1].gtid if listed and reached_floor else None
        found.append(
            OnlyHereDomain(
                domain=domain, count=count if reached_floor and count else None, first=first, last=e.gtid,
                reason=e.reason, transactions=listed,
            )
        )  # fmt: skip
    return found


def only_here_rule(server: ServerView, source: ServerView) -> Callable[[int, int, int], bool]:
    """Whether a transaction (domain, server_id, seq_no) of `server`'s binlog is one `source` lacks: beyond the
    source's newest GTID in the domain, or of `server`'s own id beyond what the source has of it."""
    assert server.status is not None and source.status is not None
    own = server.status.server_id
    theirs = source.status.positions
    source_state = {(g.domain, g.server): g.seq for g in parse_state(theirs.binlog_state)}
    source_pos = position(theirs.binlog)

    def is_only_here(domain: int, server_id: int, seq_no: int) -> bool:
        newest_there = source_pos.get(domain)
        return (server_id == own and seq_no > source_state.get((domain, own), 0)) or (
            newest_there is None or seq_no > newest_there.seq
        )

    return is_only_here


def _words(d: OnlyHereDomain) -> str:
    how_many = f"{d.count} transaction(s)" if d.count is not None else "transactions"
    span = f"{d.first} … {d.last}" if d.first is not None and d.first != d.last else d.last
    return f"domain {d.domain}: {how_many}, {span}"
