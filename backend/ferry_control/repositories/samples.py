"""Position and lag samples: change-only inserts, history by time range (lag history downsampled per time bucket
when a range holds more than a response may), and the retention job's downsampling and deletion (one statement
each, with a dialect-specific time bucket)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    Row,
    SQLColumnExpression,
    cast,
    delete,
    func,
    insert,
    select,
)
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import LagSample, PositionSample, Server


def once(statement: Any, name: str) -> Any:
    """`statement` as a common table expression computed once (MATERIALIZED, which PostgreSQL 12+ and SQLite 3.35+
    both honour): the per-bucket aggregate joined back to its last samples must never be re-run per sample, which
    a planner without statistics yet (a burst of inserts) was seen to choose."""
    return statement.cte(name).prefix_with("MATERIALIZED")


class SampleRepository:
    def __init__(self, session: AsyncSession):
        self.session = session
        #: Samples added and not written yet (`write`), as rows: no ORM object per sample (a collector cycle adds
        #: thousands; building and flushing them one by one was a large part of its CPU).
        self._positions: list[dict[str, Any]] = []
        self._lags: list[dict[str, Any]] = []

    def add_position(self, *, server_id: int, domain_id: int, gtid: str, seq_no: int, sampled_at: datetime) -> None:
        """A position sample, written by the next `write`."""
        self._positions.append(
            {"server_id": server_id, "domain_id": domain_id, "gtid": gtid, "seq_no": seq_no, "sampled_at": sampled_at}
        )

    def add_lag(
        self, *, link_id: int, cluster_id: int, replica_server_id: int, master_server_id: int | None,
        connection: str | None, domain_id: int, transactions: int, seconds: float, sampled_at: datetime,
    ) -> None:  # fmt: skip
        """A lag sample, written by the next `write`: it names its link's cluster, replica, master and connection
        itself, so it outlives the link."""
        self._lags.append(
            {"link_id": link_id, "cluster_id": cluster_id, "replica_server_id": replica_server_id,
             "master_server_id": master_server_id, "connection": connection, "domain_id": domain_id,
             "transactions": transactions, "seconds": seconds, "sampled_at": sampled_at}
        )  # fmt: skip

    def discard(self) -> None:
        """Forgets the samples added since the last write (their record failed)."""
        self._positions, self._lags = [], []

    async def write(self) -> None:
        """Inserts the samples added since the last write: one bulk statement per table, in the caller's
        transaction (a savepoint's rollback takes them back with the rest)."""
        positions, self._positions = self._positions, []
        lags, self._lags = self._lags, []
        if positions:
            await self.session.execute(insert(PositionSample), positions)
        if lags:
            await self.session.execute(insert(LagSample), lags)

    async def position_history(
        self,
        cluster_id: int,
        since: datetime,
        until: datetime,
        limit: int,
        server_id: int | None = None,
        domain_id: int | None = None,
    ) -> Sequence[PositionSample]:
        statement = self._position_filter(select(PositionSample), cluster_id, since, until, server_id, domain_id)
        statement = statement.order_by(PositionSample.sampled_at, PositionSample.id).limit(limit)
        return (await self.session.scalars(statement)).all()

    def _position_filter(
        self, statement: Any, cluster_id: int, since: datetime, until: datetime, server_id: int | None,
        domain_id: int | None,
    ) -> Any:  # fmt: skip
        statement = statement.join(Server, Server.id == PositionSample.server_id).where(
            Server.cluster_id == cluster_id, PositionSample.sampled_at >= since, PositionSample.sampled_at <= until
        )
        if server_id is not None:
            statement = statement.where(PositionSample.server_id == server_id)
        if domain_id is not None:
            statement = statement.where(PositionSample.domain_id == domain_id)
        return statement

    async def reach_at(self, cluster_id: int, at: datetime) -> dict[int, int]:
        """Per domain, the highest seq_no any of the cluster's servers had reached at `at` (their samples are
        change-only, so the last one at or before `at` is the value then; positions only grow)."""
        statement = (
            select(PositionSample.domain_id, func.max(PositionSample.seq_no))
            .join(Server, Server.id == PositionSample.server_id)
            .where(Server.cluster_id == cluster_id, PositionSample.sampled_at <= at)
            .group_by(PositionSample.domain_id)
        )
        return {int(domain): int(seq_no) for domain, seq_no in (await self.session.execute(statement)).all()}

    async def position_extent(
        self, cluster_id: int, since: datetime, until: datetime, server_id: int | None = None,
        domain_id: int | None = None,
    ) -> tuple[int, int]:  # fmt: skip
        """How many position samples the range holds, and in how many series (server and domain)."""
        rows = self._position_filter(select(func.count(PositionSample.id)).select_from(PositionSample), cluster_id,
                                     since, until, server_id, domain_id)  # fmt: skip
        series = self._position_filter(
            select(PositionSample.server_id, PositionSample.domain_id).select_from(PositionSample), cluster_id, since,
            until, server_id, domain_id,
        ).distinct().subquery()  # fmt: skip
        count = await self.session.scalar(select(func.count()).select_from(series))
        return int(await self.session.scalar(rows) or 0), int(count or 0)

    async def position_downsampled(
        self, cluster_id: int, since: datetime, until: datetime, bucket_s: int, server_id: int | None = None,
        domain_id: int | None = None,
    ) -> Sequence[Row[PositionSample, int]]:  # fmt: skip
        """Per series and `bucket_s`-second bucket, its last sample (the highest id) with the bucket's lowest
        seq_no."""
        bucket = self._bucket(PositionSample.sampled_at, bucket_s)
        grouped = self._position_filter(
            select(PositionSample.server_id, PositionSample.domain_id, func.min(PositionSample.seq_no).label("lo"),
                   func.max(PositionSample.id).label("last_id")).select_from(PositionSample),
            cluster_id, since, until, server_id, domain_id,
        ).group_by(PositionSample.server_id, PositionSample.domain_id, bucket)  # fmt: skip
        grouped = once(grouped, "position_buckets")
        statement = (
            select(PositionSample, grouped.c.lo)
            .join(grouped, PositionSample.id == grouped.c.last_id)
            .order_by(PositionSample.sampled_at, PositionSample.id)
        )
        return (await self.session.execute(statement)).all()

    async def lag_history(
        self,
        cluster_id: int,
        since: datetime,
        until: datetime,
        limit: int,
        replica_server_id: int | None = None,
        domain_id: int | None = None,
    ) -> Sequence[LagSample]:
        statement = self._lag_filter(select(LagSample), cluster_id, since, until, replica_server_id, domain_id)
        statement = statement.order_by(LagSample.sampled_at, LagSample.id).limit(limit)
        return (await self.session.scalars(statement)).all()

    def _lag_filter(
        self, statement: Any, cluster_id: int, since: datetime, until: datetime, replica_server_id: int | None,
        domain_id: int | None,
    ) -> Any:  # fmt: skip
        statement = statement.where(
            LagSample.cluster_id == cluster_id, LagSample.sampled_at >= since, LagSample.sampled_at <= until
        )
        if replica_server_id is not None:
            statement = statement.where(LagSample.replica_server_id == replica_server_id)
        if domain_id is not None:
            statement = statement.where(LagSample.domain_id == domain_id)
        return statement

    async def lag_extent(
        self, cluster_id: int, since: datetime, until: datetime, replica_server_id: int | None = None,
        domain_id: int | None = None,
    ) -> tuple[int, int]:  # fmt: skip
        """How many lag samples the range holds, and in how many series (link and domain)."""
        rows = self._lag_filter(select(func.count(LagSample.id)).select_from(LagSample), cluster_id, since, until,
                                replica_server_id, domain_id)  # fmt: skip
        series = self._lag_filter(select(LagSample.link_id, LagSample.domain_id).select_from(LagSample), cluster_id,
                                  since, until, replica_server_id, domain_id).distinct().subquery()  # fmt: skip
        count = await self.session.scalar(select(func.count()).select_from(series))
        return int(await self.session.scalar(rows) or 0), int(count or 0)

    async def lag_downsampled(
        self, cluster_id: int, since: datetime, until: datetime, bucket_s: int, replica_server_id: int | None = None,
        domain_id: int | None = None,
    ) -> Sequence[Row[LagSample, float, float]]:  # fmt: skip
        """Per series and `bucket_s`-second bucket, its last sample (the highest id: samples are stored in time
        order) with the bucket's lowest and highest seconds, as Grafana's downsampling keeps min, max and last."""
        bucket = self._bucket(LagSample.sampled_at, bucket_s)
        grouped = self._lag_filter(
            select(LagSample.link_id, LagSample.domain_id, func.min(LagSample.seconds).label("lo"),
                   func.max(LagSample.seconds).label("hi"), func.max(LagSample.id).label("last_id")).select_from(
                LagSample),
            cluster_id, since, until, replica_server_id, domain_id,
        ).group_by(LagSample.link_id, LagSample.domain_id, bucket)  # fmt: skip
        grouped = once(grouped, "lag_buckets")
        statement = (
            select(LagSample, grouped.c.lo, grouped.c.hi)
            .join(grouped, LagSample.id == grouped.c.last_id)
            .order_by(LagSample.sampled_at, LagSample.id)
        )
        return (await self.session.execute(statement)).all()

    async def lag_before(
        self,
        cluster_id: int,
        before: datetime,
        replica_server_id: int | None = None,
        domain_id: int | None = None,
    ) -> list[LagSample]:
        """Each link and domain's newest sample older than `before`: its lag when a range starting there begins
        (samples are change-only, so a value holds until the next one)."""
        newest = (
            select(LagSample.link_id, LagSample.domain_id, func.max(LagSample.sampled_at).label("sampled_at"))
            .where(LagSample.cluster_id == cluster_id, LagSample.sampled_at < before)
            .group_by(LagSample.link_id, LagSample.domain_id)
        )
        if replica_server_id is not None:
            newest = newest.where(LagSample.replica_server_id == replica_server_id)
        if domain_id is not None:
            newest = newest.where(LagSample.domain_id == domain_id)
        # Computed once (`once`): rejoined per sample instead, with no statistics yet (a table just filled), a day of
        # samples took minutes.
        latest = once(newest, "lag_newest")
        statement = (
            select(LagSample)
            .join(
                latest,
                (LagSample.link_id == latest.c.link_id)
                & (LagSample.domain_id == latest.c.domain_id)
                & (LagSample.sampled_at == latest.c.sampled_at),
            )
            .order_by(LagSample.link_id, LagSample.domain_id, LagSample.id)
        )
        rows = (await self.session.scalars(statement)).all()
        # Two samples of one link and domain at the same instant: the later row wins.
        return list({(sample.link_id, sample.domain_id): sample for sample in rows}.values())

    async def count_positions(self, server_id: int | None = None) -> int:
        statement = select(func.count()).select_from(PositionSample)
        if server_id is not None:
            statement = statement.where(PositionSample.server_id == server_id)
        return int(await self.session.scalar(statement) or 0)

    # -- retention -------------------------------------------------------------------------------------------

    def _bucket(self, column: SQLColumnExpression[datetime], bucket_s: int) -> ColumnElement[int]:
        if self.session.get_bind().dialect.name == "sqlite":
            epoch = cast(func.strftime("%s", column), Integer)
        else:
            epoch = cast(func.floor(func.extract("epoch", column)), BigInteger)
        return cast(func.floor(epoch / bucket_s), BigInteger)

    async def downsample_positions(self, older_than: datetime, newer_than: datetime, bucket_s: int) -> int:
        """Between the two times, keeps only the last sample per server, domain and bucket; returns rows deleted."""
        ranked = (
            select(
                PositionSample.id.label("id"),
                func.row_number()
                .over(
                    partition_by=(
                        PositionSample.server_id,
                        PositionSample.domain_id,
                        self._bucket(PositionSample.sampled_at, bucket_s),
                    ),
                    order_by=(PositionSample.sampled_at.desc(), PositionSample.id.desc()),
                )
                .label("rank"),
            )
            .where(PositionSample.sampled_at < older_than, PositionSample.sampled_at >= newer_than)
            .subquery()
        )
        doomed = select(ranked.c.id).where(ranked.c.rank > 1)
        result = await self.session.execute(delete(PositionSample).where(PositionSample.id.in_(doomed)))
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def downsample_lag(self, older_than: datetime, newer_than: datetime, bucket_s: int) -> int:
        """Between the two times, keeps only the last sample per link, domain and bucket; returns rows deleted."""
        ranked = (
            select(
                LagSample.id.label("id"),
                func.row_number()
                .over(
                    partition_by=(LagSample.link_id, LagSample.domain_id, self._bucket(LagSample.sampled_at, bucket_s)),
                    order_by=(LagSample.sampled_at.desc(), LagSample.id.desc()),
                )
                .label("rank"),
            )
            .where(LagSample.sampled_at < older_than, LagSample.sampled_at >= newer_than)
            .subquery()
        )
        doomed = select(ranked.c.id).where(ranked.c.rank > 1)
        result = await self.session.execute(delete(LagSample).where(LagSample.id.in_(doomed)))
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def delete_positions_before(self, cutoff: datetime) -> int:
        result = await self.session.execute(delete(PositionSample).where(PositionSample.sampled_at < cutoff))
        return int(result.rowcount or 0)  # type: ignore[attr-defined]

    async def delete_lag_before(self, cutoff: datetime) -> int:
        result = await self.session.execute(delete(LagSample).where(LagSample.sampled_at < cutoff))
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
