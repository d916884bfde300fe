"""Interleavings: every server's recent binlog transactions, fetched at once through the drivers (no database
connection held meanwhile; each server's part bounded in time, a server that does not answer is that server's error
alone), and the union of their GTIDs in one order so the streams can be laid side by side; with each server's
position and the (domain, origin) pairs among the GTIDs shown that it will never receive (services/gtid_reach.py), so
the view tells "never here" from "not here yet"."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.db import release_connection
from ferry_control.core.gtid import seq_by_domain
from ferry_control.drivers.base import EventsPage
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import ReplicationLink, Server
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.interleavings import (
    AlignedTransaction,
    Interleavings,
    NeverReceived,
    ServerEvents,
    ServerTransaction,
)
from ferry_control.services.clusters import ClusterService
from ferry_control.services.gtid_reach import ReachLink, ReachServer, never_reasons

log = logging.getLogger(__name__)


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

    async def recent(self, cluster_id: int, limit: int, domain: int | None = None) -> Interleavings:
        cluster = await self.clusters.get(cluster_id)
        servers = list(await self.servers.list_for_cluster(cluster_id))
        links = [_reach_link(link) for link in await LinkRepository(self.session).list_for_cluster(cluster_id)]
        reach_servers = [ReachServer(s.id, s.label, s.reported_server_id) for s in servers]
        positions = {s.id: seq_by_domain(s.gtid_current_pos) for s in servers}
        # Nothing more is read from the database: its connection goes back to the pool before the fan-out, so slow
        # servers never hold one (the collector and operations need them).
        await release_connection(self.session)

        async def fetch(server: Server) -> EventsPage | str:
            if server.admin_address is None:
                return "admin address unknown"
            try:
                return await asyncio.wait_for(
                    self.drivers.for_server(server, cluster).recent_events(limit, domain), self.timeout_s
                )
            except DriverError as e:
                return str(e)
            except TimeoutError:
                return f"no answer within {self.timeout_s} s (heavy_read_timeout_s)"
            except Exception as e:  # whatever one server's answer provokes is its part's error, never the request's
                log.warning("reading the recent events of %s failed unexpectedly", server.label, exc_info=True)
                return f"its answer could not be read: {type(e).__name__}"

        pages = await asyncio.gather(*(fetch(s) for s in servers))
        listed: list[ServerEvents] = []
        union: dict[str, AlignedTransaction] = {}
        #: Per GTID: (not on its origin server, commit time) as each server reports it.
        commit_times: dict[str, list[tuple[bool, int]]] = {}
        for server, page in zip(servers, pages, strict=True):
            if isinstance(page, str):
                listed.append(
                    ServerEvents(
                        server_id=server.id,
                        name=server.name,
                        transactions=[],
                        error=page,
                        position=positions[server.id],
                    )
                )
                continue
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
                    server_id=server.id, name=server.name, transactions=transactions, position=positions[server.id]
                )
            )
        for gtid, times in commit_times.items():
            union[gtid].commit_ts_us = min(times)[1]
        pairs = sorted({(a.domain, a.origin_server_id) for a in union.values()})
        for domain_id, origin in pairs:
            for server_id, reason in never_reasons(reach_servers, links, domain_id, origin).items():
                for events in listed:
                    if events.server_id == server_id:
                        events.never.append(NeverReceived(domain=domain_id, origin_server_id=origin, reason=reason))
        order = sorted(union.values(), key=lambda a: (a.commit_ts_us or 0, a.domain, a.seq_no))
        return Interleavings(cluster_id=cluster_id, servers=listed, union=order)
