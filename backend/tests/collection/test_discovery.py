"""Discovery from one registered server: masters from its connections (admin port from the cluster's offset),
replicas from the master's list with the protocol and admin addresses they advertise (registered and visited),
and the collector taking over what was found. Discovery asks at most `discovery_concurrency_max` servers at once
and holds no database connection while they answer (slow servers there are fake nodes answering when let)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from tests.conftest import LiveFactory
from tests.ferryd_cluster import ADMIN_PORT_OFFSET, FerrydCluster, free_port
from tests.hostile_servers import Answer, FakeNode, serving, valid_status
from tests.waiting import eventually


async def discover_from_replica1(
    client: httpx.AsyncClient, ferryd: FerrydCluster, offset: int | None
) -> tuple[int, dict]:
    cluster = (await client.post("/api/v1/clusters", json={"name": "found", "admin_port_offset": offset})).json()
    seed = ferryd.replica1
    response = await client.post(
        f"/api/v1/clusters/{cluster['id']}/discovery",
        json={
            "name": "replica1",
            "host": "127.0.0.1",
            "protocol_port": seed.protocol_port,
            "admin_port": seed.admin_port,
        },
    )
    assert response.status_code == 200, response.text
    return cluster["id"], response.json()


async def test_discovery_from_one_replica_finds_its_master_and_the_masters_other_replica(
    app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    cluster_id, found = await discover_from_replica1(client, ferryd, ADMIN_PORT_OFFSET)
    assert found["seed"]["name"] == "replica1" and found["seed"]["reported_server_id"] == 2
    added = {s["name"]: s for s in found["added"]}
    master = added[ferryd.master.listen]
    assert (master["protocol_port"], master["admin_port"], master["origin"]) == (
        ferryd.master.protocol_port,
        ferryd.master.admin_port,
        "discovered",
    )
    assert master["reported_server_id"] == 1, "the master was visited through its derived admin address"
    other = added[ferryd.replica2.listen]
    assert (other["reported_server_id"], other["host"], other["protocol_port"], other["admin_port"]) == (
        3,
        "127.0.0.1",
        ferryd.replica2.protocol_port,
        ferryd.replica2.admin_port,
    ), "registered with the addresses it advertises to its master"
    assert other["origin"] == "discovered"
    assert len(found["added"]) == 2, "replica1 is recognised in the master's list by its address"
    assert not [n for n in found["notes"] if n["registered_server_id"] == other["id"]]

    await app.state.collector.run_cycle()
    edges = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["edges"]
    assert sorted(
        (e["replica_registered_server_id"], e["source"], e["connection"], e["master_registered_server_id"])
        for e in edges
    ) == sorted(
        [(found["seed"]["id"], "replica", "main", master["id"]), (other["id"], "replica", "main", master["id"])]
    )


async def test_without_an_offset_a_discovered_master_is_recorded_without_admin_port(
    client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    _, found = await discover_from_replica1(client, ferryd, None)
    assert [(s["protocol_port"], s["admin_port"]) for s in found["added"]] == [(ferryd.master.protocol_port, None)]
    master_id = found["added"][0]["id"]
    assert any(
        n["registered_server_id"] == master_id and "without an admin port" in n["message"] for n in found["notes"]
    )
    assert any(n["registered_server_id"] == master_id and "not visited" in n["message"] for n in found["notes"])


async def test_discovering_again_adds_nothing_new(client: httpx.AsyncClient, ferryd: FerrydCluster) -> None:
    cluster_id, first = await discover_from_replica1(client, ferryd, ADMIN_PORT_OFFSET)
    again = await client.post(
        f"/api/v1/clusters/{cluster_id}/discovery",
        json={
            "host": "127.0.0.1",
            "protocol_port": ferryd.master.protocol_port,
            "admin_port": ferryd.master.admin_port,
        },
    )
    body = again.json()
    assert body["added"] == []
    assert body["seed"]["id"] == next(
        s["id"] for s in first["added"] if s["protocol_port"] == ferryd.master.protocol_port
    )
    assert {s["id"] for s in body["known"]} == {first["seed"]["id"]} | {s["id"] for s in first["added"]} - {
        body["seed"]["id"]
    }


IDLE_IN_TRANSACTION = "SELECT count(*) FROM pg_stat_activity WHERE datname = :db AND state LIKE 'idle in transaction%'"


def transactions_left_open(admin_database_url: str, database_url: str) -> int:
    """Connections to the app's database that sit in a transaction without running a statement (PostgreSQL's own
    view of its sessions)."""
    engine = create_engine(admin_database_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            return int(
                connection.execute(
                    text(IDLE_IN_TRANSACTION),
                    {"db": make_url(database_url).database},
                ).scalar_one()
            )
    finally:
        engine.dispose()


async def test_discovery_asks_at_most_its_cap_at_once_and_holds_no_database_connection_meanwhile(
    live_app: LiveFactory, admin_database_url: str
) -> None:
    """A seed lists eight replicas whose admin API answers only when the test lets it: while they wait, exactly
    `discovery_concurrency_max` (3) of them are being asked, and no connection of the app's database is left in a
    transaction; let go, all eight are registered."""
    replicas = FakeNode(Answer.json(valid_status(server_id=50)))
    replicas.hold = asyncio.Event()
    async with serving(replicas) as replicas_url:
        admin = replicas_url.removeprefix("http://")
        listed: list[dict[str, Any]] = [
            {"server_id": 100 + i, "address": f"127.0.0.1:{50000 + i}", "sent_position": "",
             "listen": f"127.0.0.1:{free_port()}", "admin": admin}
            for i in range(8)
        ]  # fmt: skip
        seed = FakeNode(Answer.json(valid_status(server_id=9, replicas=listed)))
        async with serving(seed) as seed_url, live_app(discovery_concurrency_max=3) as live:
            cluster = (await live.client.post("/api/v1/clusters", json={"name": "wide"})).json()
            body = {"host": "127.0.0.1", "protocol_port": free_port(), "admin_port": int(seed_url.rsplit(":", 1)[1])}
            discovery = asyncio.create_task(live.client.post(f"/api/v1/clusters/{cluster['id']}/discovery", json=body))
            try:
                await eventually("three replicas asked at once", lambda: replicas.in_flight == 3 or None)
                left_open = await asyncio.to_thread(
                    transactions_left_open, admin_database_url, live.settings.database.url
                )
            finally:
                replicas.hold.set()
            response = await discovery
    assert response.status_code == 200, response.text
    assert len(response.json()["added"]) == 8, response.json()
    assert replicas.most_in_flight == 3, f"{replicas.most_in_flight} asked at once (the cap is 3)"
    assert left_open == 0, "a database transaction stayed open while the servers were asked"
