"""The retention job: full resolution for recent samples, one sample per bucket for older ones, nothing past the
retention period — on PostgreSQL and on the embedded SQLite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.core.migrate import upgrade
from ferry_control.models import Cluster, PositionSample, Server
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.samples import SampleRepository
from ferry_control.services.retention import apply_retention

NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
RETENTION = dict(position_sample_full_resolution_s=3600, position_sample_bucket_s=60, position_sample_retention_s=86400)


async def seed(session: AsyncSession) -> int:
    cluster = await ClusterRepository(session).add(Cluster(name="retention"))
    server = Server(cluster_id=cluster.id, name="s", host="h", protocol_port=1, labels={})
    session.add(server)
    await session.flush()
    # Recent: one sample every 10 s for 10 minutes (all kept).
    # Old (between 1 h and 24 h): six samples in each of three minutes (one per minute kept).
    # Expired (older than 24 h): two samples (deleted).
    times = [NOW - timedelta(seconds=10 * i) for i in range(60)]
    old_minute = NOW - timedelta(hours=2)
    times += [old_minute.replace(second=0) + timedelta(minutes=m, seconds=10 * i) for m in range(3) for i in range(6)]
    times += [NOW - timedelta(days=2), NOW - timedelta(days=3)]
    for seq, at in enumerate(sorted(times), start=1):
        session.add(PositionSample(server_id=server.id, domain_id=0, gtid=f"0-1-{seq}", seq_no=seq, sampled_at=at))
    await session.flush()
    return server.id


async def check(session: AsyncSession, settings: Settings) -> None:
    server_id = await seed(session)
    report = await apply_retention(SampleRepository(session), settings, NOW)
    assert (report.positions_downsampled, report.positions_expired) == (15, 2)
    rows = (await session.scalars(select(PositionSample).where(PositionSample.server_id == server_id))).all()
    assert len(rows) == 60 + 3
    old = sorted(r.sampled_at for r in rows if r.sampled_at < NOW - timedelta(hours=1))
    assert [t.second for t in old] == [50, 50, 50], "the last sample of each minute is kept"
    again = await apply_retention(SampleRepository(session), settings, NOW)
    assert (again.positions_downsampled, again.positions_expired) == (0, 0)


async def test_retention_on_postgresql(session: AsyncSession, settings: Settings) -> None:
    await check(session, settings.model_copy(update=RETENTION))


async def test_retention_on_sqlite(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'r.sqlite3'}", **RETENTION)
    upgrade(settings.database.url)
    engine = create_engine(settings)
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            await check(session, settings)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("bucket_s", [1, 3600])
async def test_recent_samples_are_never_touched(session: AsyncSession, settings: Settings, bucket_s: int) -> None:
    server_id = await seed(session)
    tuned = settings.model_copy(
        update={
            **RETENTION,
            "position_sample_bucket_s": bucket_s,
            "position_sample_full_resolution_s": 86400 * 10,
            "position_sample_retention_s": 86400 * 10,
        }
    )
    report = await apply_retention(SampleRepository(session), tuned, NOW)
    assert (report.positions_downsampled, report.positions_expired) == (0, 0)
    assert len((await session.scalars(select(PositionSample).where(PositionSample.server_id == server_id))).all()) == 80
