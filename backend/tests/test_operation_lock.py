"""The per-cluster operation lock is a row locked with SELECT … FOR UPDATE: on PostgreSQL a second holder (another
API instance, i.e. another connection) cannot take it while the first transaction lives."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from ferry_control.core.db import create_sessionmaker, session_scope
from ferry_control.models import Cluster
from ferry_control.repositories.clusters import ClusterRepository


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
