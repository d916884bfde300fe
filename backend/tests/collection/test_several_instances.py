"""Several API instances on one database: the collector's lease (one conditional UPDATE, on SQLite and PostgreSQL),
two instances with their collectors on one PostgreSQL and a real ferryd cluster (one leads, samples are recorded
once, a standby takes over when the leader stops or its lease lapses), and the event relay (LISTEN/NOTIFY): an SSE
client of the standby sees the leader's position events and the steps of the operations it runs, and a listener
that lost its connection listens again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import bindparam, func, select, text
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.pool import NullPool

from ferry_control.core.config import Settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.core.migrate import upgrade
from ferry_control.core.security import Role
from ferry_control.main import create_app
from ferry_control.models import COLLECTOR_LEASE, PositionSample
from ferry_control.repositories.leases import LeaseRepository
from ferry_control.schemas.operation import OperationStep
from ferry_control.services.event_bus import ClusterEvent
from ferry_control.services.event_relay import (
    LISTENER_APPLICATION_NAME,
    PAYLOAD_BYTES_MAX,
    SENDER_APPLICATION_NAME,
    pack,
    unpack,
)
from ferry_control.services.tokens import TokenService
from tests.collection.test_collector import sse_events
from tests.conftest import LOOPBACK_SERVERS, TOKEN_PEPPER, Tokens, empty_database
from tests.ferryd_cluster import NODE_TOKEN, FerrydCluster
from tests.helpers import register, serve
from tests.waiting import eventually

#: Bound on every wait for a condition in these tests.
WAIT_S = 30.0
POLL_INTERVAL_S = 0.2
#: Far longer than any stall of a leader's event loop on a busy machine, so a standby never takes over by a lapse the
#: test did not make (a clean stop gives the lease back at once; a dead leader's lapse is set by the test).
LEASE_S = 10.0
T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def seconds(s: float) -> timedelta:
    return timedelta(seconds=s)


# -- the lease, unit-level on both databases --------------------------------------------------------------------


@pytest.fixture
async def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'control.sqlite3'}"
    upgrade(url)
    return url


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
async def test_the_lease_is_taken_renewed_lapses_and_is_given_back(
    dialect: str, sqlite_url: str, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    engine = create_engine(Settings(database_url=sqlite_url)) if dialect == "sqlite" else None
    maker = create_sessionmaker(engine) if engine is not None else sessionmaker
    try:
        async with maker() as session:
            leases = LeaseRepository(session)
            ttl = 10.0
            assert await leases.acquire(COLLECTOR_LEASE, "a", ttl, T0), "the migration's row is free"
            assert not await leases.acquire(COLLECTOR_LEASE, "b", ttl, T0 + seconds(1)), "a holds it"
            assert await leases.acquire(COLLECTOR_LEASE, "a", ttl, T0 + seconds(5)), "a renews it, until T0+15"
            assert not await leases.acquire(COLLECTOR_LEASE, "b", ttl, T0 + seconds(12)), "renewed: not lapsed"
            assert not await leases.acquire(COLLECTOR_LEASE, "b", ttl, T0 + seconds(15)), "lapses after, not at"
            assert await leases.acquire(COLLECTOR_LEASE, "b", ttl, T0 + seconds(15.001)), "lapsed: b takes it"
            lease = await leases.get(COLLECTOR_LEASE)
            assert lease is not None and (lease.holder, lease.expires_at) == ("b", T0 + seconds(25.001))
            assert not await leases.acquire(COLLECTOR_LEASE, "a", ttl, T0 + seconds(16))
            assert not await leases.release(COLLECTOR_LEASE, "a"), "not a's to give back"
            assert await leases.release(COLLECTOR_LEASE, "b")
            assert await leases.acquire(COLLECTOR_LEASE, "a", ttl, T0 + seconds(17)), "given back: free at once"
            assert not await leases.acquire("no-such-lease", "a", ttl, T0), "a lease without its row is never held"
    finally:
        if engine is not None:
            await engine.dispose()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
async def test_of_concurrent_attempts_one_takes_the_lease(
    dialect: str, sqlite_url: str, live_database_url: str
) -> None:
    engine = create_engine(Settings(database_url=sqlite_url if dialect == "sqlite" else live_database_url))
    maker = create_sessionmaker(engine)

    async def attempt(holder: str) -> bool:
        async with session_scope(maker) as session:
            return await LeaseRepository(session).acquire(COLLECTOR_LEASE, holder, 10.0, T0)

    try:
        won = await asyncio.gather(*(attempt(f"instance-{n}") for n in range(8)))
        assert sum(won) == 1, won
        async with maker() as session:
            lease = await LeaseRepository(session).get(COLLECTOR_LEASE)
        assert lease is not None and lease.holder == f"instance-{won.index(True)}"
    finally:
        await engine.dispose()
        if dialect == "postgresql":
            empty_database(live_database_url)


def test_a_lease_shorter_than_a_poll_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="FERRY_COLLECTOR_LEASE_S"):
        Settings(poll_interval_s=5.0, collector_lease_s=5.0)
    assert Settings(poll_interval_s=5.0, collector_lease_s=15.0).collection.lease_s == 15.0


def test_on_sqlite_nothing_is_relayed(sqlite_url: str) -> None:
    app = create_app(Settings(database_url=sqlite_url))
    assert app.state.relay is None and app.state.bus.forward is None


# -- notification payloads --------------------------------------------------------------------------------------


def test_events_are_packed_in_order_under_the_payload_limit() -> None:
    events = [
        ClusterEvent(
            cluster_id=1 + n % 3, type="position", data={"registered_server_id": n, "domain": 1, "gtid": f"1-1-{n}"}
        )
        for n in range(500)
    ]
    payloads, dropped = pack("host-1-ab", 7, events)
    assert dropped == 0 and len(payloads) > 1
    assert all(len(p.encode()) <= PAYLOAD_BYTES_MAX for p in payloads)
    assert [json.loads(p)["seq"] for p in payloads] == list(range(7, 7 + len(payloads)))
    unpacked = [unpack(p) for p in payloads]
    assert {origin for origin, _ in unpacked} == {"host-1-ab"}
    assert [e for _, batch in unpacked for e in batch] == events


def test_an_event_too_big_for_one_notification_keeps_its_scalar_fields() -> None:
    steps = [OperationStep.instant(f"step{n}", "passed", "é" * 1000) for n in range(10)]
    event = ClusterEvent(4, "operation", {"operation_id": 9, "type": "switchover", "state": "running", "steps": steps})
    small = ClusterEvent(4, "position", {"registered_server_id": 1, "domain": 2, "gtid": "2-1-5"})
    payloads, dropped = pack("host-1-ab", 0, [event, small])
    assert dropped == 0 and all(len(p.encode()) <= PAYLOAD_BYTES_MAX for p in payloads)
    _, received = unpack(payloads[0])
    assert received[0].data.fields() == {"operation_id": 9, "type": "switchover", "state": "running", "truncated": True}
    assert received[0].at == event.at and received[1] == small


def test_a_foreign_notification_is_refused() -> None:
    for payload in ("not json", '{"origin": "x"}', '{"origin": "x", "events": [{"type": "position"}]}'):
        with pytest.raises(ValueError):
            unpack(payload)


# -- instances on one PostgreSQL --------------------------------------------------------------------------------


class Instance:
    """An app with its lifespan running, started and stopped by the test."""

    def __init__(self, settings: Settings, tokens: Tokens):
        self.app = create_app(settings)
        self.tokens = tokens
        self._stack = AsyncExitStack()

    @property
    def instance_id(self) -> str:
        return self.app.state.instance_id

    async def start(self) -> None:
        await self._stack.enter_async_context(self.app.router.lifespan_context(self.app))

    async def stop(self) -> None:
        await self._stack.aclose()

    def client(self, role: str = "operator") -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://ferry.test", headers=self.tokens.header(role)
        )

    async def collector_health(self) -> dict[str, Any]:
        async with self.client() as client:
            response = await client.get("/api/v1/health")
        assert response.status_code == 200, response.text
        return response.json()["collector"]

    async def role(self) -> str | None:
        return (await self.collector_health())["role"]

    async def metric(self, line_start: str) -> str:
        async with self.client() as client:
            exposition = (await client.get("/metrics")).text
        return next(line for line in exposition.splitlines() if line.startswith(line_start))


Instances = Callable[..., Awaitable[Instance]]


@pytest.fixture
async def instances(live_database_url: str) -> AsyncIterator[Instances]:
    """`await instances(**settings)`: one more API instance on the live database, its collector polling every
    POLL_INTERVAL_S with a lease of LEASE_S; all stopped, and the database emptied, after the test."""
    tokens: Tokens | None = None
    started: list[Instance] = []

    async def start(**overrides: Any) -> Instance:
        nonlocal tokens
        fields: dict[str, Any] = {
            "environment": "test", "database_url": live_database_url, "token_pepper": TOKEN_PEPPER,
            "node_token": NODE_TOKEN, "collector_enabled": True, "drill_scheduler_enabled": False,
            "poll_interval_s": POLL_INTERVAL_S, "collector_lease_s": LEASE_S, "poll_timeout_s": 5.0,
            "unreachable_after_failures": 2, "node_read_retries_max": 0, "server_trusted_hosts": LOOPBACK_SERVERS,
            # One collector for all clusters, by the lease (test_shared_collection.py has the shared one).
            "collector_share_clusters": False,
        }  # fmt: skip
        settings = Settings(**{**fields, **overrides})
        if tokens is None:
            engine = create_engine(settings)
            async with session_scope(create_sessionmaker(engine)) as session:
                service = TokenService(session, settings)
                tokens = Tokens(**{role.value: (await service.create(f"live-{role.value}", role))[1] for role in Role})
            await engine.dispose()
        instance = Instance(settings, tokens)
        await instance.start()
        started.append(instance)
        return instance

    try:
        yield start
    finally:
        for instance in reversed(started):
            await instance.stop()
        empty_database(live_database_url)


async def has_role(instance: Instance, role: str, leader: Instance | None = None) -> bool:
    """Whether the instance's health says `role` (and, when given, names `leader` as the lease's holder)."""
    health = await instance.collector_health()
    return health["role"] == role and (leader is None or health["leader_instance_id"] == leader.instance_id)


async def leader_and_standby(instances: Instances) -> tuple[Instance, Instance]:
    leader = await instances()
    await eventually("the first instance to lead", lambda: has_role(leader, "leader"), WAIT_S)
    standby = await instances()
    await eventually("the second instance to stand by", lambda: has_role(standby, "standby", leader), WAIT_S)
    return leader, standby


async def sampled(instance: Instance, gtid: str, servers: list[int]) -> bool:
    return await samples_of(instance, gtid) == servers


async def samples_of(instance: Instance, gtid: str) -> list[int]:
    """The servers of every position sample row of `gtid`, as stored."""
    async with instance.app.state.sessionmaker() as session:
        rows = await session.scalars(select(PositionSample.server_id).where(PositionSample.gtid == gtid))
        return sorted(rows.all())


async def test_one_of_two_instances_collects_and_a_standby_takes_over_when_it_stops(
    instances: Instances, ferryd: FerrydCluster
) -> None:
    leader, standby = await leader_and_standby(instances)
    seen_by_standby = await standby.collector_health()
    assert seen_by_standby["leader_instance_id"] == leader.instance_id
    assert seen_by_standby["instance_id"] == standby.instance_id != leader.instance_id
    assert (await leader.collector_health())["leader_instance_id"] == leader.instance_id
    assert await leader.metric("ferry_control_collector_leader ") == "ferry_control_collector_leader 1.0"
    assert await standby.metric("ferry_control_collector_leader ") == "ferry_control_collector_leader 0.0"

    async with leader.client() as client:
        _, ids = await register(client, ferryd)
    gtid = ferryd.master.increment("leases", "k", domain=5)
    ferryd.converge()
    every_server = sorted(ids.values())
    await eventually("each server's sample of the write", lambda: sampled(leader, gtid, every_server), WAIT_S)
    cycles = leader.app.state.collector.cycles
    await eventually("five more cycles of the leader", lambda: leader.app.state.collector.cycles >= cycles + 5, WAIT_S)
    assert await samples_of(standby, gtid) == every_server, "one sample row per server for the change"
    async with standby.app.state.sessionmaker() as session:
        repeated = await session.scalar(
            select(func.count()).select_from(
                select(PositionSample.server_id, PositionSample.domain_id, PositionSample.gtid)
                .group_by(PositionSample.server_id, PositionSample.domain_id, PositionSample.gtid)
                .having(func.count() > 1)
                .subquery()
            )
        )
    assert repeated == 0
    assert standby.app.state.collector.last_cycle_at is None, "the standby polled nothing"

    await leader.stop()
    async with standby.app.state.sessionmaker() as session:
        lease = await LeaseRepository(session).get(COLLECTOR_LEASE)
    assert lease is not None and lease.holder in (None, standby.instance_id), "given back on a clean stop"
    await eventually("the standby to take over", lambda: has_role(standby, "leader"), WAIT_S)
    assert (await standby.collector_health())["leader_instance_id"] == standby.instance_id
    assert await leader.metric("ferry_control_collector_leader ") == "ferry_control_collector_leader 0.0"

    after = ferryd.master.increment("leases", "k", domain=5)
    ferryd.converge()
    await eventually("the new leader to record the next write", lambda: sampled(standby, after, every_server), WAIT_S)


async def test_a_standby_takes_over_once_a_dead_leaders_lease_lapsed(
    instances: Instances, live_database_url: str
) -> None:
    engine = create_engine(Settings(database_url=live_database_url))
    sessions = create_sessionmaker(engine)
    async with session_scope(sessions) as session:
        # An instance that took the lease and died: nobody renews it or gives it back. Its lease runs far longer
        # than any start-up, so the new instance is a standby first whatever the machine's speed.
        assert await LeaseRepository(session).acquire(COLLECTOR_LEASE, "dead-instance", WAIT_S * 10, datetime.now(UTC))

    instance = await instances()
    await eventually("the first attempt", lambda: instance.app.state.collector.lease.holder is not None, WAIT_S)
    health = await instance.collector_health()
    assert (health["role"], health["leader_instance_id"]) == ("standby", "dead-instance")
    assert health["last_cycle_at"] is None, "a standby does not poll"

    async with session_scope(sessions) as session:  # the dead instance's lease lapses now
        lease = await LeaseRepository(session).get(COLLECTOR_LEASE)
        assert lease is not None and lease.holder == "dead-instance"
        lapses_at = lease.expires_at = datetime.now(UTC)
    await engine.dispose()
    await eventually("the standby to take the lapsed lease", lambda: has_role(instance, "leader"), WAIT_S)
    assert datetime.now(UTC) >= lapses_at
    assert (await instance.collector_health())["leader_instance_id"] == instance.instance_id


async def test_an_sse_client_of_the_standby_sees_the_leaders_events(
    instances: Instances, ferryd: FerrydCluster
) -> None:
    leader, standby = await leader_and_standby(instances)
    await eventually("the standby to listen", lambda: standby.app.state.relay.listening, WAIT_S)
    async with leader.client() as client:
        cluster_id, ids = await register(client, ferryd)
    try:
        async with serve(standby.app) as base:
            async with httpx.AsyncClient(timeout=WAIT_S, headers=standby.tokens.header("viewer")) as sse:
                url = f"{base}/api/v1/clusters/{cluster_id}/events"
                async with sse.stream("GET", url) as stream, asyncio.timeout(WAIT_S):
                    assert stream.status_code == 200
                    events = sse_events(stream)
                    assert (await anext(events))[0] == "subscribed"

                    gtid = ferryd.master.increment("relay", "k", domain=6)
                    async for name, data in events:
                        if name == "position" and data["registered_server_id"] == ids["master"] and data["domain"] == 6:
                            assert data["gtid"] == gtid and data["cluster_id"] == cluster_id
                            break

                    # An operation the leader runs: its steps, in order.
                    async with leader.client() as client:
                        response = await client.post(
                            f"/api/v1/clusters/{cluster_id}/operations/switchover",
                            json={"candidate_registered_server_id": ids["replica2"], "dry_run": True},
                        )
                    assert response.status_code == 202, response.text
                    operation_id = response.json()["id"]
                    seen: list[dict[str, Any]] = []
                    async for name, data in events:
                        if name == "operation" and data["operation_id"] == operation_id:
                            seen.append(data)
                            if data["state"] != "running":
                                break
        assert [(e["state"], [(s["name"], s["state"]) for s in e["steps"]]) for e in seen] == [
            ("running", []),
            ("running", [("preflight", "running")]),
            ("running", [("preflight", "passed")]),
            ("succeeded", [("preflight", "passed")]),
        ]
        assert standby.app.state.collector.last_cycle_at is None, "the standby polled nothing"
        relayed = await standby.metric('ferry_control_event_relay_events_total{outcome="received"}')
        assert float(relayed.split()[-1]) >= 5
    finally:
        ferryd.converge()


async def test_the_relay_reconnects_after_losing_its_connections(instances: Instances, live_database_url: str) -> None:
    first = await instances(collector_enabled=False)
    second = await instances(collector_enabled=False)
    listening = lambda: first.app.state.relay.listening and second.app.state.relay.listening  # noqa: E731
    await eventually("both instances to listen", listening, WAIT_S)

    async def relayed(data: dict[str, Any]) -> None:
        async with second.app.state.bus.subscribe(77) as subscription:
            first.app.state.bus.publish(ClusterEvent(77, "health", data))
            async with asyncio.timeout(WAIT_S):
                event = await subscription.next()
        assert (event.type, event.data.fields()) == ("health", data)

    await relayed({"registered_server_id": 1, "state": "healthy"})  # the first instance's sender is connected now
    engine = create_sync_engine(live_database_url, poolclass=NullPool)
    with engine.connect() as connection:
        terminated = connection.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name IN :names"
            ).bindparams(bindparam("names", expanding=True)),
            {"names": [LISTENER_APPLICATION_NAME, SENDER_APPLICATION_NAME]},
        ).scalar_one()
    engine.dispose()
    assert terminated == 3, "two listeners and a sender"
    await eventually("the loss to be noticed", lambda: not second.app.state.relay.listening, WAIT_S)
    await eventually("both instances to listen again", listening, WAIT_S)
    await relayed({"registered_server_id": 1, "state": "unreachable"})  # the sender replaced its connection
    assert await second.metric("ferry_control_event_relay_listening ") == "ferry_control_event_relay_listening 1.0"
    dropped = await first.metric('ferry_control_event_relay_events_total{outcome="dropped"}')
    assert dropped.endswith(" 0.0")
