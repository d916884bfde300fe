"""The writable domains an operation records for a multi-source server it made a master
(services/orchestrator/writable.py): the replaced master's domains less those the kept connections bring, recorded
as set by the operation, and taken back by a rejoin — an admin's setting stays. The whole move on real MariaDB
servers is in test_multi_root.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.models import Cluster, Server
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.services.orchestrator.writable import new_master_domains, record_writable, withdraw_writable
from ferry_control.services.writable_domains import WritableDomainsService


def candidate(**received: str) -> Any:
    """A candidate whose connections (by name) received these positions."""
    connections = [SimpleNamespace(name=name, received_position=pos) for name, pos in received.items()]
    return SimpleNamespace(status=SimpleNamespace(connections=connections))


def test_the_new_master_takes_the_replaced_masters_domains_but_those_its_kept_connections_bring() -> None:
    multi_source = candidate(m1="1-1-9", m2="2-2-5,3-2-1")
    assert new_master_domains({1, 2}, multi_source, ["m2"]) == [1]
    assert new_master_domains({1, 4}, multi_source, ["m2"]) == [1, 4]
    assert new_master_domains({2, 3}, multi_source, ["m2"]) == [], "every domain is another master's"
    assert new_master_domains({1, 2}, multi_source, []) == [1, 2], "nothing kept: all of them"
    assert new_master_domains({1}, SimpleNamespace(status=None), ["m2"]) == [1], "a candidate not read: all of them"


async def test_an_operations_record_is_withdrawn_by_a_rejoin_and_an_admins_setting_stays(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    async with session_scope(sessionmaker) as session:
        cluster = await ClusterRepository(session).add(Cluster(name="writable"))
        servers = [Server(cluster_id=cluster.id, name=f"s{i}", host="h", protocol_port=i, labels={}) for i in (1, 2)]
        session.add_all(servers)
        await session.flush()
        promoted, admins = (s.id for s in servers)
        await WritableDomainsService(session).set(cluster.id, admins, [2], by="admin")
    ctx: Any = SimpleNamespace(sessionmaker=sessionmaker, cluster_id=cluster.id, operation_id=7)

    await record_writable(ctx, promoted, [])
    async with sessionmaker() as session:
        assert (await WritableDomainsService(session).get(cluster.id, promoted)).writable_domains == [], "none: none"
    await record_writable(ctx, promoted, [1])
    async with sessionmaker() as session:
        read = await WritableDomainsService(session).get(cluster.id, promoted)
    assert read.writable_domains == [1] and read.set_by == "operation 7" and read.set_at is not None, read

    ctx.operation_id = 8
    assert await withdraw_writable(ctx, promoted) == [1]
    assert await withdraw_writable(ctx, admins) == [], "an admin's setting is not an operation's to take back"
    assert await withdraw_writable(ctx, promoted) == [], "nothing left to take back"
    async with sessionmaker() as session:
        service = WritableDomainsService(session)
        read = await service.get(cluster.id, promoted)
        assert read.writable_domains == [] and read.set_by == "operation 8", read
        assert (await service.get(cluster.id, admins)).writable_domains == [2]
