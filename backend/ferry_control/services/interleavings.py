"""Interleavings: every server's binlog transactions within a window (services/interleaving_window.py: the newest N
of each server, the last N seconds of writes, or a GTID range per domain), fetched at once through the drivers (no
database connection held meanwhile; each server's part bounded in time and in transactions, a server that does not
answer is that server's error alone), and the union of their GTIDs in one order so the streams can be laid side by
side; with each server's position, how many transactions it is behind the window's newest end per domain, and the
(domain, origin) pairs among the GTIDs shown that it will never receive (services/gtid_reach.py), so the view tells
"never here" from "not here yet"."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.db import release_connection
from ferry_control.core.gtid import seq_by_domain
from ferry_control.drivers.base import BinlogTransaction, ServerDriver
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import ReplicationLink, Server
from ferry_control.models.base import utcnow
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.samples import SampleRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.interleavings import (
    AlignedTransaction,
    Interleavings,
    InterleavingWindow,
    NeverReceived,
    ServerEvents,
    ServerTransaction,
)
from ferry_control.services.clusters import ClusterService
from ferry_control.services.gtid_reach import ReachLink, ReachServer, never_reasons
from ferry_control.services.interleaving_window import COUNT, Window, behind, time_window

log = logging.getLogger(__name__)

#: Transactions asked of a server beyond those the window still holds by seq_no (other domains' may be between).
WINDOW_MARGIN = 50
#: A window's read goes back through at most this many times its bound in transactions (those newer than a GTID
#: range's end are read and passed over), then stops as truncated.
WINDOW_READ_FACTOR = 10


@dataclass
class WindowRead:
    """One server's part: its transactions in the window (newest first), the newest seq_no of each domain its
    binlog showed, and whether the bound stopped the read before the window's start."""

    transactions: list[BinlogTransaction]
    newest: dict[int, int]
    truncated: bool


async def read_window(
    driver: ServerDriver, window: Window, bound: int, domain: int | None, reached: dict[int, int]
) -> WindowRead:
    """Pages back through the server's binlog (newest first) until the window's start in every domain it holds
    transactions of in the window (`reached`: its position as last read), or `bound` transactions, or the binlog's
    start. A count window is one page of `bound`."""
    if window.kind == "count":
        page = await driver.recent_events(bound, domain)
        newest: dict[int, int] = {}
        for t in page.transactions:
            newest.setdefault(t.domain, t.seq_no)
        return WindowRead(list(page.transactions), newest, truncated=False)
    found: list[BinlogTransaction] = []
    newest = {}
    oldest: dict[int, int] = {}
    read = 0
    if domain is None and window.domains is not None and len(window.domains) == 1:
        (domain,) = window.domains  # one domain's range: the server filters the others out itself
    # A range that ends before the server's newest transactions is read back from its end, not from the newest.
    before = await _range_end(driver, window, reached, domain)
    if before is not None and window.to_seq is not None:
        reached = {d: min(seq_no, window.to_seq.get(d, seq_no)) for d, seq_no in reached.items()}
    while True:
        # As many as the window still holds by seq_no (from its start to what is reached, or the oldest seen): each
        # call going back reads its part of the binlog again, so neither many small pages nor one past the start.
        seen = {d: max(reached.get(d, 0), newest.get(d, 0)) for d in set(reached) | set(newest)}
        seen.update(oldest)
        wanted = window.left(seen, domain) + WINDOW_MARGIN
        page = await driver.recent_events(min(wanted, bound - len(found)), domain, before)
        read += len(page.transactions)
        for t in page.transactions:
            newest.setdefault(t.domain, t.seq_no)
            oldest[t.domain] = t.seq_no
            if window.holds(t.domain, t.seq_no):
                found.append(t)
        known = {d: max(reached.get(d, 0), newest.get(d, 0)) for d in set(reached) | set(newest)}
        needed = window.needed(known)
        if domain is not None:
            needed &= {domain}
        if page.next_before is None or window.read_far_enough(oldest, needed):
            return WindowRead(found, newest, truncated=False)
        if len(found) >= bound or read >= bound * WINDOW_READ_FACTOR:
            return WindowRead(found[:bound], newest, truncated=True)
        before = page.next_before


async def _range_end(driver: ServerDriver, window: Window, reached: dict[int, int], domain: int | None) -> int | None:
    """Where a GTID range's read starts, when the server has written past its end in every domain it holds in the
    range: the latest of the cursors just past each domain's end (`events_cursor_after`); None (read from the
    newest end) for any other window, or when the server cannot say where one is."""
    if window.kind != "gtid" or window.to_seq is None:
        return None
    needed = window.needed(reached)
    if domain is not None:
        needed &= {domain}
    cursors = []
    for d in sorted(needed):
        end = window.to_seq.get(d)
        if end is None or reached.get(d, 0) <= end:
            return None  # the range runs to the server's newest transaction in this domain
        found = await driver.events_cursor_after(d, end)
        if found is None:
            return None
        cursors.append(found)
    return max(cursors) if cursors else None


def _reach_link(link: ReplicationLink) -> ReachLink:
    filters = (link.settings or {}).get("filters") or {}
    return ReachLink(
        replica_id=link.replica_server_id,
        master_id=link.master_server_id,
        connection=link.name,
        filters={str(k): str(v) for k, v in filters.items()} if isinstance(filters, dict) else {},
    )


class InterleavingService:
    def __init__(self, session: AsyncSession, drivers: DriverFactory, timeout_s: float = 10.0):
        self.session = session
        self.clusters = ClusterService(session)
        self.servers = ServerRepository(session)
        self.drivers = drivers
        self.timeout_s = timeout_s

    async def recent(
        self, cluster_id: int, limit: int, domain: int | None = None, window: Window = COUNT, last_s: int | None = None
    ) -> Interleavings:
        """`window` for a count or GTID window; `last_s` for the last N seconds (the window made here, from the
        positions the collector recorded)."""
        cluster = await self.clusters.get(cluster_id)
        if last_s is not None:
            window = time_window(
                last_s, await SampleRepository(self.session).reach_at(cluster_id, utcnow() - timedelta(seconds=last_s))
            )
        servers = list(await self.servers.list_for_cluster(cluster_id))
        links = [_reach_link(link) for link in await LinkRepository(self.session).list_for_cluster(cluster_id)]
        reach_servers = [ReachServer(s.id, s.label, s.reported_server_id) for s in servers]
        positions = {s.id: seq_by_domain(s.gtid_current_pos) for s in servers}
        # Nothing more is read from the database: its connection goes back to the pool before the fan-out, so slow
        # servers never hold one (the collector and operations need them).
        await release_connection(self.session)

        async def fetch(server: Server) -> WindowRead | str:
            if server.admin_address is None:
                return "admin address unknown"
            try:
                driver = self.drivers.for_server(server, cluster)
                async with asyncio.timeout(self.timeout_s):
                    return await read_window(driver, window, limit, domain, positions[server.id])
            except DriverError as e:
                return str(e)
            except TimeoutError:
                return f"no answer within {self.timeout_s} s (heavy_read_timeout_s)"
            except Exception as e:  # whatever one server's answer provokes is its part's error, never the request's
                log.warning("reading the recent events of %s failed unexpectedly", server.label, exc_info=True)
                return f"its answer could not be read: {type(e).__name__}"

        pages = await asyncio.gather(*(fetch(s) for s in servers))
        #: What each server has reached per domain: its position as the collector read it, or its binlog now.
        reached = {s.id: dict(positions[s.id]) for s in servers}
        listed: list[ServerEvents] = []
        union: dict[str, AlignedTransaction] = {}
        #: Per GTID: (not on its origin server, commit time) as each server reports it.
        commit_times: dict[str, list[tuple[bool, int]]] = {}
        for server, page in zip(servers, pages, strict=True):
            if isinstance(page, str):
                listed.append(
                    ServerEvents(
                        registered_server_id=server.id,
                        name=server.name,
                        transactions=[],
                        error=page,
                        position=positions[server.id],
                    )
                )
                continue
            for d, seq_no in page.newest.items():
                reached[server.id][d] = max(reached[server.id].get(d, 0), seq_no)
            transactions = []
            for index, t in enumerate(page.transactions):
                transactions.append(
                    ServerTransaction(
                        gtid=t.gtid,
                        domain=t.domain,
                        origin_server_id=t.server_id,
                        seq_no=t.seq_no,
                        commit_id=t.commit_id,
                        commit_ts_us=t.commit_ts_us,
                        file=t.file,
                        offset=t.offset,
                        tables=list(t.tables),
                        rows=t.rows,
                    )
                )
                aligned = union.get(t.gtid)
                if aligned is None:
                    aligned = union[t.gtid] = AlignedTransaction(
                        gtid=t.gtid,
                        domain=t.domain,
                        origin_server_id=t.server_id,
                        seq_no=t.seq_no,
                        commit_ts_us=t.commit_ts_us,
                        positions={},
                    )
                aligned.positions[server.id] = index
                if t.commit_ts_us is not None:
                    on_origin = server.reported_server_id == t.server_id
                    commit_times.setdefault(t.gtid, []).append((not on_origin, t.commit_ts_us))
            listed.append(
                ServerEvents(
                    registered_server_id=server.id,
                    name=server.name,
                    transactions=transactions,
                    position=positions[server.id],
                    truncated=page.truncated,
                )
            )
        for gtid, times in commit_times.items():
            union[gtid].commit_ts_us = min(times)[1]
        pairs = sorted({(a.domain, a.origin_server_id) for a in union.values()})
        for domain_id, origin in pairs:
            for server_id, reason in never_reasons(reach_servers, links, domain_id, origin).items():
                for events in listed:
                    if events.registered_server_id == server_id:
                        events.never.append(NeverReceived(domain=domain_id, origin_server_id=origin, reason=reason))
        order = sorted(union.values(), key=lambda a: (a.commit_ts_us or 0, a.domain, a.seq_no))
        answered = [reached[e.registered_server_id] for e in listed if e.error is None]
        newest = window.newest(answered)
        # A domain's newest end is where its origin is when the origin answered: the servers are read one after
        # another within a moment, and a replica read later must not make the origin look behind in its own domain.
        by_reported = {s.reported_server_id: s.id for s in servers if s.reported_server_id is not None}
        failed = {e.registered_server_id for e in listed if e.error is not None}
        latest: dict[int, AlignedTransaction] = {}
        for aligned in order:
            if aligned.seq_no >= latest.get(aligned.domain, aligned).seq_no:
                latest[aligned.domain] = aligned
        for domain_id, aligned in latest.items():
            writer = by_reported.get(aligned.origin_server_id)
            if domain_id in newest and writer is not None and writer not in failed:
                newest[domain_id] = min(newest[domain_id], reached[writer].get(domain_id, newest[domain_id]))
        for events in listed:
            if events.error is None:
                events.reached = {
                    d: reached[events.registered_server_id][d] for d in sorted(reached[events.registered_server_id])
                }
                events.behind = behind(newest, reached[events.registered_server_id], (n.domain for n in events.never))
        return Interleavings(
            cluster_id=cluster_id,
            servers=listed,
            union=order,
            window=InterleavingWindow(
                kind=window.kind, last_s=window.last_s, limit=limit, from_seq=dict(window.from_seq),
                to_seq=dict(window.to_seq) if window.to_seq is not None else None,
                domains=sorted(window.domains) if window.domains is not None else None, newest=newest,
            ),
        )  # fmt: skip
