"""Consistency after the fact: a replica compared with the source it replicates from, table by table and chunk by
chunk of primary key, at the same GTID position — on demand, and after a rejoin or a rebuild (follow_up.py).

For each batch of chunks (`chunks_per_stop`) the replica's connection is stopped; the source then reads their
checksums in one consistent read, which says the GTID position they belong to (the driver's `chunk_checksums`:
nothing written, nothing locked) and is at or past the stopped replica's; the replica's connection is started `UNTIL`
that position, the same chunks are read there once it stopped at it, and the connection is started again — on every
exit, an error or a cancel included. A pause (`pause_ms`) between
batches lets the replica keep up. Chunks whose row count or checksum differ are listed per table with their key
range; any drift ends the operation failed, naming the tables (`changed: false`: the replica replicates again).
After an API instance died mid-check, its reconcile starts the replica's connection again if it was left stopped
(`repair_consistency_check`)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Literal

from ferry_control.drivers.base import ChunkSums, ServerDriver, TableChunks
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation import ConsistencyCheckParams
from ferry_control.schemas.operation_results import (
    ConsistencyCheckResult,
    DriftedChunk,
    OperationResult,
    TableConsistency,
)
from ferry_control.services.orchestrator import actions
from ferry_control.services.orchestrator.failures import RepairVerdict, refused
from ferry_control.services.orchestrator.gtid import per_domain, position
from ferry_control.services.orchestrator.repairs import RepairContext
from ferry_control.services.orchestrator.runner import OperationContext, OperationFailed
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link

ConsistencyCheck = OperationContext[ConsistencyCheckParams, ConsistencyCheckResult]

#: Between two publications of the comparison's progress.
PROGRESS_EVERY_S = 1.0
#: Drifted chunks named in the failure's message (all are in the result).
NAMED_MAX = 5


def batches(count: int, size: int) -> Iterator[tuple[int, ...]]:
    """Chunk indexes 0…count-1 in batches of `size`."""
    for start in range(0, count, size):
        yield tuple(range(start, min(start + size, count)))


def drifted(chunks: TableChunks, source: ChunkSums, replica: ChunkSums) -> list[DriftedChunk]:
    """The chunks whose row count or checksum differ, with their key range."""
    found = []
    for index, want in sorted(source.sums.items()):
        have = replica.sums.get(index)
        if have == want:
            continue
        lower, upper = chunks.range_of(index)
        found.append(
            DriftedChunk(
                index=index,
                lower=None if lower is None else list(lower),
                upper=None if upper is None else list(upper),
                source_rows=want.rows,
                replica_rows=0 if have is None else have.rows,
                position=source.position,
            )
        )
    return found


def _choose_link(links: Sequence[Link], connection: str | None, label: str) -> Link:
    named = [link for link in links if connection is None or link.connection.name == connection]
    if not named:
        raise refused(
            f"{label} has no replication connection {connection!r} from a registered server"
            if connection is not None
            else f"{label} replicates from no registered server: there is no source to compare it with"
        )
    if len(named) > 1:
        names = ", ".join(repr(link.connection.name) for link in named)
        raise refused(f"{label} replicates over several connections ({names}): name the one to check")
    return named[0]


async def compare_batch(
    source: ServerDriver,
    replica: ServerDriver,
    connection: str,
    timeout_s: float,
    label: str,
    read: Callable[[ServerDriver], Awaitable[ChunkSums]],
) -> tuple[ChunkSums, ChunkSums]:
    """`read` on the source, then on the replica stopped exactly at the source's position: the replica's connection
    is stopped first (so the source's read, taken after, is at or past it), started UNTIL that position, waited for
    and read; then started again whatever happened (an error or a cancel too)."""
    await replica.stop_replication(connection)
    try:
        at_source = await read(source)
        target = at_source.position
        await replica.start_replication(connection, until=target)
        reached = await actions.wait_reached(replica, target, timeout_s, connection=connection)
        if not reached.reached:
            raise OperationFailed(
                f"{label} did not reach {target} within {timeout_s:g} s (it is at {reached.position})"
                + (f": {reached.broken}" if reached.broken else ""),
                changed=False,
            )
        at_replica = await read(replica)
        want = per_domain(position(target))
        if {d: g for d, g in per_domain(position(at_replica.position)).items() if d in want} != want:
            raise OperationFailed(
                f"{label} was read at {at_replica.position}, not at its source's {target}: not comparable",
                changed=False,
            )
        return at_source, at_replica
    finally:
        try:
            await asyncio.shield(_restart(replica, connection))
        except DriverError as e:
            raise OperationFailed(
                f"{label}: connection {connection!r} was not started again after the comparison: {e}",
                kind="server_error",
                changed=True,
                left=[f"{label}: connection {connection!r} stopped"],
            ) from e


async def _read_chunks(driver: ServerDriver, *, chunks: TableChunks, indexes: tuple[int, ...]) -> ChunkSums:
    return await driver.chunk_checksums(chunks, indexes)


async def _restart(driver: ServerDriver, connection: str) -> None:
    await driver.stop_replication(connection)
    await driver.start_replication(connection)


async def run_consistency_check(ctx: ConsistencyCheck) -> None:
    params = ctx.params
    async with ctx.step("preflight") as step:
        snapshot = await ctx.snapshot()
        view = snapshot.by_id.get(params.registered_server_id)
        if view is None:
            raise refused(f"no server with id {params.registered_server_id} in this cluster")
        if not view.reachable:
            raise refused(f"{view.info.label} cannot be reached: {view.error}")
        link = _choose_link(snapshot.links_of(view.info.id), params.connection, view.info.label)
        source = link.master
        if not source.reachable:
            raise refused(f"its source {source.info.label} cannot be reached: {source.error}")
        if not link.replicating:
            problem = await actions.connection_problem(view.require_driver(), link.connection.name)
            raise refused(f"{view.info.label} does not replicate from {source.info.label}: {problem or 'not running'}")
        if source.info.kind != view.info.kind:
            raise refused(f"{view.info.label} and its source {source.info.label} are servers of different kinds")
        source_tables = await source.require_driver().user_tables()
        replica_tables = set(await view.require_driver().user_tables())
        tables = list(params.tables) if params.tables is not None else list(source_tables)
        unknown = sorted(set(tables) - set(source_tables) - replica_tables)
        if unknown:
            raise refused(f"no such table on {source.info.label} or {view.info.label}: {', '.join(unknown)}")
        extra = sorted(replica_tables - set(source_tables)) if params.tables is None else []
        step.detail = {
            "replica": view.info.label,
            "source": source.info.label,
            "connection": link.connection.name,
            "tables": len(tables),
            "only_on_replica": extra,
        }
    result = ctx.result
    result.registered_server_id, result.source_registered_server_id = view.info.id, source.info.id
    result.connection = link.connection.name
    result.tables = []  # set (not only appended to): the stored result keeps the fields that were set
    if ctx.dry_run:
        return
    await ctx.pre_hooks()
    timeout_s = ctx.settings.drills.checksum_wait_s
    replica, upstream = view.require_driver(), source.require_driver()
    async with ctx.step("compare") as step:
        published = time.monotonic()

        def progress(table: str) -> None:
            nonlocal published
            step.detail = {
                "table": table,
                "tables_done": len(result.tables),
                "tables": len(tables) + len(extra),
                "chunks_checked": result.chunks_checked,
                "chunks_drifted": result.chunks_drifted,
            }
            if time.monotonic() - published >= PROGRESS_EVERY_S:
                ctx.steps[-1].detail = dict(step.detail)
                ctx.changed()
                published = time.monotonic()

        for table in tables:
            progress(table)
            if table not in replica_tables or table not in source_tables:
                side: Literal["replica", "source"] = "replica" if table not in replica_tables else "source"
                result.tables.append(TableConsistency(table=table, missing_on=side))
                continue
            chunks = await upstream.chunk_bounds(table, params.chunk_rows)
            compared = TableConsistency(table=table, key=list(chunks.key), chunks=chunks.count)
            for batch in batches(chunks.count, params.chunks_per_stop):
                at_source, at_replica = await compare_batch(
                    upstream, replica, link.connection.name, timeout_s, view.info.label,
                    functools.partial(_read_chunks, chunks=chunks, indexes=batch),
                )  # fmt: skip
                compared.source_rows += sum(s.rows for s in at_source.sums.values())
                compared.replica_rows += sum(s.rows for s in at_replica.sums.values())
                compared.drifted += drifted(chunks, at_source, at_replica)
                result.chunks_checked += len(batch)
                result.chunks_drifted = sum(len(t.drifted) for t in result.tables) + len(compared.drifted)
                progress(table)
                if params.pause_ms:
                    await asyncio.sleep(params.pause_ms / 1000)  # the throttle: the replica catches up meanwhile
            result.tables.append(compared)
        for table in extra:
            result.tables.append(TableConsistency(table=table, missing_on="source"))
        progress("")
    bad = [t for t in result.tables if t.drifted or t.missing_on]
    result.consistent = not bad
    if bad:
        named = [
            f"{t.table}: only on the {'source' if t.missing_on == 'replica' else 'replica'}"
            if t.missing_on
            else f"{t.table}: {len(t.drifted)} of {t.chunks} chunk(s) differ"
            for t in bad[:NAMED_MAX]
        ]
        raise OperationFailed(
            f"{view.info.label} differs from {source.info.label}: " + "; ".join(named)
            + (f"; and {len(bad) - NAMED_MAX} more table(s)" if len(bad) > NAMED_MAX else ""),
            changed=False,
        )  # fmt: skip


async def repair_consistency_check(
    ctx: RepairContext, snapshot: ClusterSnapshot, result: OperationResult, done: list[str], problems: list[str]
) -> RepairVerdict:
    """A consistency check's: its replica's connection, which it may have left stopped at a source's position
    (START … UNTIL), replicates again (started when it is not running)."""
    assert isinstance(result, ConsistencyCheckResult)
    view = snapshot.by_id.get(result.registered_server_id or 0)
    if view is None or result.connection is None:
        done.append("it stopped before touching a connection: nothing to do")
        return "unchanged"
    if not view.reachable or view.status is None:
        problems.append(f"{view.info.label} cannot be reached: its connection {result.connection!r} was not checked")
        return "unknown"
    connection = next((c for c in view.status.connections if c.name == result.connection), None)
    if connection is None or connection.running:
        done.append(f"{view.info.label}: connection {result.connection!r} runs (or is gone): nothing to do")
        return "unchanged"
    try:
        await view.require_driver().start_replication(result.connection)
    except DriverError as e:
        problems.append(f"{view.info.label}: connection {result.connection!r} not started again: {e}")
        return "unknown"
    done.append(f"{view.info.label}: connection {result.connection!r}, left stopped by the comparison, started again")
    return "undone"
