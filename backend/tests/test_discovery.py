"""Discovery from one registered server: masters from its connections (admin port from the cluster's offset),
replicas from the master's list with the protocol and admin addresses they advertise (registered and visited),
and the collector taking over what was found."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.ferryd_cluster import ADMIN_PORT_OFFSET, FerrydCluster


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
    assert not [n for n in found["notes"] if n["server_id"] == other["id"]]

    await app.state.collector.run_cycle()
    edges = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["edges"]
    assert sorted(
        (e["replica_server_id"], e["source"], e["connection"], e["master_server_id"]) for e in edges
    ) == sorted(
        [(found["seed"]["id"], "replica", "main", master["id"]), (other["id"], "replica", "main", master["id"])]
    )


async def test_without_an_offset_a_discovered_master_is_recorded_without_admin_port(
    client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    _, found = await discover_from_replica1(client, ferryd, None)
    assert [(s["protocol_port"], s["admin_port"]) for s in found["added"]] == [(ferryd.master.protocol_port, None)]
    master_id = found["added"][0]["id"]
    assert any(n["server_id"] == master_id and "without an admin port" in n["message"] for n in found["notes"])
    assert any(n["server_id"] == master_id and "not visited" in n["message"] for n in found["notes"])


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
