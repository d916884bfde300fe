"""The per-cluster operation lock is a row locked with SELECT … FOR UPDATE: on PostgreSQL a second holder (another
API instance, i.e. another connection) cannot take it while the first transaction lives; on SQLite the lock holds
the database's write lock. An operation asked of a cluster deleted between its read and the lock is a 404, never a
crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy import delete
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.core.errors import NotFound
from ferry_control.core.migrate import upgrade
from ferry_control.models import Cluster, OperationLock
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.schemas.operation import OperationParams
from ferry_control.services.operations import OperationService


async def test_a_locked_cluster_cannot_be_locked_by_another_connection(engine: AsyncEngine) -> None:
    sessions = create_sessionmaker(engine)
    async with session_scope(sessions) as session:
        cluster_id = (await ClusterRepository(session).add(Cluster(name="locked-cluster"))).id
    try:
        async with sessions() as first, sessions() as second:
            held = await ClusterRepository(first).lock_for_operation(cluster_id)
            assert held is not None and held.operation_id is None
            with pytest.raises(OperationalError, match="could not obtain lock"):
                await ClusterRepository(second).lock_for_operation(cluster_id, nowait=True)
            await second.rollback()
            await first.rollback()
            assert await ClusterRepository(second).lock_for_operation(cluster_id, nowait=True) is not None
            await second.rollback()
    finally:
        async with session_scope(sessions) as session:
            repository = ClusterRepository(session)
            await repository.delete(await repository.get(cluster_id))


async def test_on_sqlite_the_lock_takes_the_database_write_lock(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'lock.sqlite3'}")
    upgrade(settings.database.url)
    engine = create_engine(settings)
    sessions = create_sessionmaker(engine)
    try:
        async with session_scope(sessions) as session:
            cluster_id = (await ClusterRepository(session).add(Cluster(name="locked-cluster"))).id
        async with sessions() as first, sessions() as second:
            assert await ClusterRepository(first).lock_for_operation(cluster_id) is not None
            raw = await second.connection()
            await raw.exec_driver_sql("PRAGMA busy_timeout = 0")
            with pytest.raises(OperationalError, match="database is locked"):
                await ClusterRepository(second).lock_for_operation(cluster_id)
            await second.rollback()
            await first.rollback()
    finally:
        await engine.dispose()


async def test_an_operation_asked_of_a_cluster_deleted_meanwhile_is_a_404_not_a_crash(session: AsyncSession) -> None:
    # The cluster is read, then deleted by another request before its operation lock is taken: the lock row is gone
    # with it (here removed alone, which is what the operation service sees at that moment).
    cluster = await ClusterRepository(session).add(Cluster(name="deleted-meanwhile"))
    await session.execute(delete(OperationLock).where(OperationLock.cluster_id == cluster.id))
    with pytest.raises(NotFound) as raised:
        await OperationService(session).start(
            cast(Any, None), cast(Any, None), cluster_id=cluster.id, type_="drill", params=OperationParams(),
            dry_run=True, requester="ops",
        )  # fmt: skip
    assert raised.value.code == "cluster_not_found"
    assert "deleted while the operation was being accepted" in raised.value.message
