"""Positions: the servers × domains matrix of the latest poll (with which servers could be master now, compared
with `is_ahead_of` of core/gtid.py's positions: ahead of every other server, or — for a root of its own domains, as
each master of several is — ahead of every other server in those domains), and position and lag history by time
range."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import AppError
from ferry_control.core.gtid import GtidPosition, restrict
from ferry_control.core.gtid import position as parse_position
from ferry_control.models import HealthState, LagSample, ReplicationLink, Server
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.samples import SampleRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.lag import LagVerdict
from ferry_control.schemas.positions import (
    LagHistory,
    LagSampleRead,
    LinkDelayRead,
    PositionCell,
    PositionHistory,
    PositionMatrix,
    PositionRow,
    PositionSampleRead,
)
from ferry_control.services.clusters import ClusterService
from ferry_control.services.lag import judge_stored, worst
from ferry_control.services.link_health import configured_delay_s

#: The history range when the caller gives none.
DEFAULT_HISTORY_RANGE = timedelta(hours=1)


def bucket_seconds(since: datetime, until: datetime, limit: int, series: int) -> int:
    """The downsampling bucket that fits `series` series of a range in `limit` samples (a range's edges can add a
    bucket per series, so one fewer bucket than would fit exactly)."""
    buckets = max(limit // max(series, 1) - 1, 1)
    return max(math.ceil((until - since).total_seconds() / buckets), 1)


def history_range(since: datetime | None, until: datetime | None) -> tuple[datetime, datetime]:
    until = until or datetime.now(UTC)
    since = since or until - DEFAULT_HISTORY_RANGE
    if since.tzinfo is None or until.tzinfo is None:
        raise AppError("since and until need a time zone (e.g. 2026-11-21T13:00:00Z)", code="naive_datetime")
    if since > until:
        raise AppError(f"since ({since.isoformat()}) is after until ({until.isoformat()})", code="empty_range")
    return since, until


def own_domains(server: Server, links: Sequence[ReplicationLink]) -> set[int]:
    """The domains a root (a server with replicas that replicates from none) originates — its position's GTIDs there
    carry its own server_id: it is master of those now. Empty for any other server."""
    is_root = any(link.master_server_id == server.id for link in links) and not any(
        link.replica_server_id == server.id for link in links
    )
    if not is_root or server.reported_server_id is None:
        return set()
    return {gtid.domain for gtid in parse_position(server.gtid_current_pos) if gtid.server == server.reported_server_id}


def lag_sample_read(sample: LagSample) -> LagSampleRead:
    """A sample as it names its link (the link may be gone since: a replica promoted keeps its history)."""
    return LagSampleRead(
        link_id=sample.link_id,
        replica_registered_server_id=sample.replica_server_id,
        master_registered_server_id=sample.master_server_id,
        connection=sample.connection,
        domain_id=sample.domain_id,
        transactions=sample.transactions,
        seconds=sample.seconds,
        sampled_at=sample.sampled_at,
    )


def domain_lags(links: Sequence[ReplicationLink]) -> dict[int, LagVerdict]:
    """Per domain, the worst lag over a replica's links (services/lag.py), each against its own configured delay."""
    verdicts: dict[int, list[LagVerdict]] = {}
    for link in links:
        for domain, value in (link.lag or {}).items():
            verdicts.setdefault(int(domain), []).append(judge_stored(value, link.settings))
    return {domain: found for domain, judged in verdicts.items() if (found := worst(judged)) is not None}


class PositionService:
    def __init__(self, session: AsyncSession):
        self.clusters = ClusterService(session)
        self.servers = ServerRepository(session)
        self.links = LinkRepository(session)
        self.samples = SampleRepository(session)

    async def matrix(self, cluster_id: int, reached: str | None = None) -> PositionMatrix:
        await self.clusters.get(cluster_id)
        servers = await self.servers.list_for_cluster(cluster_id)
        links = await self.links.list_for_cluster(cluster_id)
        positions = {s.id: GtidPosition.parse(s.gtid_current_pos) for s in servers if s.gtid_current_pos is not None}
        most_advanced = GtidPosition("")
        for position in positions.values():
            most_advanced = most_advanced.join(position)
        domains = most_advanced.domains()
        target = GtidPosition.parse(reached) if reached is not None else None

        rows = []
        for server in servers:
            server_position = positions.get(server.id)
            lag = domain_lags([link for link in links if link.replica_server_id == server.id])
            cells: dict[int, PositionCell] = {}
            if server_position is not None:
                behind = most_advanced.difference(server_position)
                for domain in domains:
                    gtid = server_position.get(domain)
                    cells[domain] = PositionCell(
                        gtid=None if gtid is None else f"{gtid.domain}-{gtid.server}-{gtid.seq}",
                        seq_no=None if gtid is None else gtid.seq,
                        behind_transactions=int(behind.get(domain, 0)),
                        lag_seconds=None if domain not in lag else lag[domain].seconds,
                        lag=lag.get(domain),
                    )
            ahead_of_all = server_position is not None and all(
                server_position.is_ahead_of(other) for other_id, other in positions.items() if other_id != server.id
            )
            owns = own_domains(server, links)
            ahead_in_own = (
                server_position is not None
                and bool(owns)
                and all(
                    restrict(server_position, owns).is_ahead_of(restrict(other, owns))
                    for other_id, other in positions.items()
                    if other_id != server.id
                )
            )
            rows.append(
                PositionRow(
                    registered_server_id=server.id,
                    server_id=server.reported_server_id,
                    name=server.name,
                    health=server.health.value,
                    gtid_current_pos=server.gtid_current_pos,
                    gtid_binlog_pos=server.gtid_binlog_pos,
                    last_seen_at=server.last_seen_at,
                    cells=cells,
                    ahead_of_all=ahead_of_all,
                    root_of=sorted(owns),
                    ahead_in_own_domains=ahead_in_own,
                    has_reached=None
                    if target is None or server_position is None
                    else server_position.is_ahead_of(target),
                )
            )
        by_id = {s.id: s for s in servers}
        could_be_master = [
            row.registered_server_id
            for row in rows
            if (row.ahead_of_all or row.ahead_in_own_domains)
            and by_id[row.registered_server_id].health == HealthState.healthy
            and not by_id[row.registered_server_id].maintenance
        ]
        return PositionMatrix(
            cluster_id=cluster_id,
            domains=domains,
            most_advanced=str(most_advanced),
            rows=rows,
            could_be_master=could_be_master,
        )

    async def position_history(
        self,
        cluster_id: int,
        since: datetime | None,
        until: datetime | None,
        limit: int,
        server_id: int | None = None,
        domain_id: int | None = None,
    ) -> PositionHistory:
        await self.clusters.get(cluster_id)
        since, until = history_range(since, until)
        count, series = await self.samples.position_extent(cluster_id, since, until, server_id, domain_id)
        if count <= limit:
            rows = await self.samples.position_history(cluster_id, since, until, limit, server_id, domain_id)
            return PositionHistory(cluster_id=cluster_id, since=since, until=until, truncated=False,
                                   samples=[PositionSampleRead.model_validate(r) for r in rows])  # fmt: skip
        # As for lag: one sample per series and bucket, buckets as wide as `limit` needs, the newest kept.
        bucket_s = bucket_seconds(since, until, limit, series)
        downsampled = await self.samples.position_downsampled(cluster_id, since, until, bucket_s, server_id,
                                                              domain_id)  # fmt: skip
        samples = [
            PositionSampleRead.model_validate(sample).model_copy(update={"seq_no_min": lo})
            for sample, lo in downsampled
        ][-limit:]
        return PositionHistory(cluster_id=cluster_id, since=since, until=until, samples=samples, truncated=True,
                               bucket_s=bucket_s)  # fmt: skip

    async def lag_history(
        self,
        cluster_id: int,
        since: datetime | None,
        until: datetime | None,
        limit: int,
        replica_server_id: int | None = None,
        domain_id: int | None = None,
    ) -> LagHistory:
        await self.clusters.get(cluster_id)
        since, until = history_range(since, until)
        delays = [
            LinkDelayRead(link_id=link.id, replica_registered_server_id=link.replica_server_id,
                          master_registered_server_id=link.master_server_id, connection=link.name, delay_s=delay)
            for link in await self.links.list_for_cluster(cluster_id)
            if (delay := configured_delay_s(link.settings))
            and (replica_server_id is None or link.replica_server_id == replica_server_id)
        ]  # fmt: skip
        before = await self.samples.lag_before(cluster_id, since, replica_server_id, domain_id)
        at_start = [lag_sample_read(sample) for sample in before]
        count, series = await self.samples.lag_extent(cluster_id, since, until, replica_server_id, domain_id)
        if count <= limit:
            rows = await self.samples.lag_history(cluster_id, since, until, limit, replica_server_id, domain_id)
            samples = [lag_sample_read(sample) for sample in rows]
            return LagHistory(cluster_id=cluster_id, since=since, until=until, at_start=at_start, samples=samples,
                              truncated=False, delays=delays)  # fmt: skip
        # More than a response may hold: one sample per series and bucket (its last, with the bucket's min and max),
        # buckets as wide as needed for `limit` (a range's edges can add a bucket per series: the oldest go first).
        bucket_s = bucket_seconds(since, until, limit, series)
        downsampled = await self.samples.lag_downsampled(cluster_id, since, until, bucket_s, replica_server_id,
                                                         domain_id)  # fmt: skip
        samples = [
            lag_sample_read(sample).model_copy(update={"seconds_min": lo, "seconds_max": hi})
            for sample, lo, hi in downsampled
        ][-limit:]
        return LagHistory(cluster_id=cluster_id, since=since, until=until, at_start=at_start, samples=samples,
                          truncated=True, bucket_s=bucket_s, delays=delays)  # fmt: skip
