"""Clusters and servers CRUD, with precise 404s, 409s on conflicts and 422s on malformed input."""

from __future__ import annotations

import httpx
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.models import Server
from tests.conftest import Tokens


async def make_cluster(client: httpx.AsyncClient, name: str = "orders", **extra: object) -> dict:
    response = await client.post("/api/v1/clusters", json={"name": name, **extra})
    assert response.status_code == 201, response.text
    return response.json()


async def test_cluster_lifecycle(client: httpx.AsyncClient) -> None:
    cluster = await make_cluster(client, description="orders service", admin_port_offset=100)
    assert (await client.get(f"/api/v1/clusters/{cluster['id']}")).json() == cluster
    assert cluster in (await client.get("/api/v1/clusters")).json()
    updated = await client.patch(f"/api/v1/clusters/{cluster['id']}", json={"description": "moved"})
    assert updated.status_code == 200 and updated.json()["description"] == "moved"
    assert (await client.delete(f"/api/v1/clusters/{cluster['id']}")).status_code == 204
    gone = await client.get(f"/api/v1/clusters/{cluster['id']}")
    assert gone.status_code == 404
    assert gone.json() == {"error": {"code": "cluster_not_found", "message": f"cluster {cluster['id']} does not exist"}}


async def test_cluster_names_are_unique(client: httpx.AsyncClient) -> None:
    first = await make_cluster(client, "dup")
    response = await client.post("/api/v1/clusters", json={"name": "dup"})
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "cluster_name_taken",
        "message": f"a cluster named 'dup' exists already (id {first['id']})",
    }


async def test_server_lifecycle_and_maintenance(client: httpx.AsyncClient) -> None:
    cluster = await make_cluster(client)
    base = f"/api/v1/clusters/{cluster['id']}/servers"
    created = await client.post(
        base, json={"host": "127.0.0.1", "protocol_port": 7301, "admin_port": 7401, "labels": {"az": "b"}}
    )
    assert created.status_code == 201, created.text
    server = created.json()
    assert (server["name"], server["kind"], server["health"], server["maintenance"]) == (
        "127.0.0.1:7301",
        "ferry",
        "unknown",
        False,
    )
    flagged = await client.put(
        f"{base}/{server['id']}/maintenance", json={"maintenance": True, "reason": "disk swap", "duration_s": 60}
    )
    assert flagged.status_code == 200 and flagged.json()["maintenance"] is True
    renamed = await client.patch(f"{base}/{server['id']}", json={"name": "node1", "labels": {"az": "c"}})
    assert renamed.json()["name"] == "node1" and renamed.json()["labels"] == {"az": "c"}
    assert [s["id"] for s in (await client.get(base)).json()] == [server["id"]]
    assert (await client.delete(f"{base}/{server['id']}")).status_code == 204
    assert (await client.get(f"{base}/{server['id']}")).status_code == 404


async def test_server_addresses_and_names_are_unique_in_a_cluster(client: httpx.AsyncClient) -> None:
    cluster = await make_cluster(client)
    base = f"/api/v1/clusters/{cluster['id']}/servers"
    assert (await client.post(base, json={"name": "a", "host": "h", "protocol_port": 1})).status_code == 201
    same_address = await client.post(base, json={"name": "b", "host": "h", "protocol_port": 1})
    assert same_address.status_code == 409
    assert (
        same_address.json()["error"]["message"]
        == f"a (server_id not read yet) of cluster {cluster['id']} has the address h:1 already"
    )
    same_name = await client.post(base, json={"name": "a", "host": "h", "protocol_port": 2})
    assert same_name.status_code == 409 and same_name.json()["error"]["code"] == "server_name_taken"


async def test_unknown_ids_get_precise_404s(client: httpx.AsyncClient) -> None:
    cluster = await make_cluster(client)
    in_cluster = f"does not exist in cluster {cluster['id']}"
    cases = {
        "/api/v1/clusters/999999": "cluster 999999 does not exist",
        "/api/v1/clusters/999999/servers": "cluster 999999 does not exist",
        f"/api/v1/clusters/{cluster['id']}/servers/999999": f"the server with id 999999 {in_cluster}",
        f"/api/v1/clusters/{cluster['id']}/operations/999999": f"operation 999999 {in_cluster}",
        "/api/v1/clusters/999999/topology": "cluster 999999 does not exist",
        "/api/v1/clusters/999999/positions": "cluster 999999 does not exist",
        "/api/v1/clusters/999999/events": "cluster 999999 does not exist",
    }
    for path, message in cases.items():
        response = await client.get(path)
        assert response.status_code == 404, path
        assert response.json()["error"]["message"] == message
    assert (await client.get("/api/v1/no-such-thing")).json()["error"]["code"] == "not_found"


async def test_a_server_of_another_cluster_is_not_found(client: httpx.AsyncClient) -> None:
    one, two = await make_cluster(client, "one"), await make_cluster(client, "two")
    server = (await client.post(f"/api/v1/clusters/{one['id']}/servers", json={"host": "h", "protocol_port": 1})).json()
    assert (await client.get(f"/api/v1/clusters/{two['id']}/servers/{server['id']}")).status_code == 404


async def test_malformed_input_gets_422_naming_the_field(client: httpx.AsyncClient) -> None:
    cluster = await make_cluster(client)
    bad_port = await client.post(
        f"/api/v1/clusters/{cluster['id']}/servers", json={"host": "h", "protocol_port": 70000}
    )
    assert bad_port.status_code == 422
    assert bad_port.json()["error"]["code"] == "validation_error"
    assert bad_port.json()["error"]["details"][0]["loc"] == ["body", "protocol_port"]
    unknown_field = await client.post("/api/v1/clusters", json={"name": "x", "colour": "red"})
    assert unknown_field.status_code == 422 and unknown_field.json()["error"]["details"][0]["loc"] == ["body", "colour"]
    bad_id = await client.get("/api/v1/clusters/abc")
    assert bad_id.status_code == 422 and bad_id.json()["error"]["details"][0]["loc"] == ["path", "cluster_id"]


async def test_malformed_gtid_gets_422_naming_the_column(client: httpx.AsyncClient) -> None:
    cluster = await make_cluster(client)
    response = await client.get(f"/api/v1/clusters/{cluster['id']}/positions", params={"reached": "1-1-5,2-x-3"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert (
        error["message"]
        == "query.reached: malformed GTID position at column 9: expected server_id (a decimal number), found 'x'"
    )
    assert error["details"][0]["ctx"]["column"] == 9


async def test_health_needs_no_token(anonymous: httpx.AsyncClient) -> None:
    body = (await anonymous.get("/api/v1/health")).json()
    assert body["status"] == "ok" and body["database"] == "ok" and body["collector"]["enabled"] is False


async def test_openapi_documents_error_models_and_examples(anonymous: httpx.AsyncClient) -> None:
    schema = (await anonymous.get("/openapi.json")).json()
    assert "ErrorBody" in schema["components"]["schemas"]
    create = schema["paths"]["/api/v1/clusters"]["post"]
    assert {"201", "401", "403", "409", "422"} <= set(create["responses"])
    assert create["responses"]["409"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    assert schema["components"]["schemas"]["ClusterCreate"]["examples"]


async def test_viewers_cannot_add_servers_or_run_discovery(client: httpx.AsyncClient, tokens: Tokens) -> None:
    cluster = await make_cluster(client, "viewed")
    viewer = tokens.header("viewer")
    message = "token 'test-viewer' has role viewer; this needs operator"
    added = await client.post(
        f"/api/v1/clusters/{cluster['id']}/servers", json={"host": "h", "protocol_port": 1}, headers=viewer
    )
    assert (added.status_code, added.json()["error"]["message"]) == (403, message)
    discovered = await client.post(
        f"/api/v1/clusters/{cluster['id']}/discovery",
        json={"host": "h", "protocol_port": 1, "admin_port": 2},
        headers=viewer,
    )
    assert (discovered.status_code, discovered.json()["error"]["message"]) == (403, message)
    assert (await client.get(f"/api/v1/clusters/{cluster['id']}/servers")).json() == []


async def test_a_server_reads_with_its_master_side_semi_sync_as_last_polled(
    client: httpx.AsyncClient, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    cluster = await make_cluster(client, "semi")
    created = await client.post(f"/api/v1/clusters/{cluster['id']}/servers", json={"host": "h", "protocol_port": 1})
    url = f"/api/v1/clusters/{cluster['id']}/servers/{created.json()['id']}"
    assert (await client.get(url)).json()["master_role"] is None, "not read yet"
    role = {"semi_sync": True, "semi_sync_timeout_ms": 10000, "semi_sync_wait_point": "AFTER_SYNC"}
    async with session_scope(sessionmaker) as session:
        await session.execute(update(Server).where(Server.id == created.json()["id"]).values(master_role=role))
    assert (await client.get(url)).json()["master_role"] == role


async def test_turning_the_replica_guard_off_needs_an_admin(client: httpx.AsyncClient, tokens: Tokens) -> None:
    cluster = await make_cluster(client, "guarded")
    url = f"/api/v1/clusters/{cluster['id']}"
    message = (
        "turning enforce_read_only_replicas off for cluster 'guarded' needs an admin token (this one is operator): "
        "it lets a replica stay writable, so clients may write to it and split the cluster's history; nothing was "
        "changed"
    )
    # An operator's PATCH that turns it off is refused whole: the other field in the same body is not applied.
    refused = await client.patch(url, json={"enforce_read_only_replicas": False, "description": "unguarded"})
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] == {"code": "guard_off_needs_admin", "message": message}
    assert (await client.get(url)).json() == cluster
    # Nor may an operator create a cluster with it off.
    created = await client.post("/api/v1/clusters", json={"name": "unguarded", "enforce_read_only_replicas": False})
    assert created.status_code == 403, created.text
    assert created.json()["error"]["code"] == "guard_off_needs_admin"
    assert "unguarded" not in [c["name"] for c in (await client.get("/api/v1/clusters")).json()]

    # An admin may; then an operator's `false` changes nothing and is no refusal, and an operator may turn it on.
    admin = tokens.header("admin")
    turned = await client.patch(url, json={"enforce_read_only_replicas": False}, headers=admin)
    assert turned.status_code == 200 and turned.json()["enforce_read_only_replicas"] is False, turned.text
    same = await client.patch(url, json={"enforce_read_only_replicas": False, "description": "still off"})
    assert same.status_code == 200 and same.json()["description"] == "still off", same.text
    on = await client.patch(url, json={"enforce_read_only_replicas": True})
    assert on.status_code == 200 and on.json()["enforce_read_only_replicas"] is True, on.text
    created = await client.post(
        "/api/v1/clusters", json={"name": "unguarded", "enforce_read_only_replicas": False}, headers=admin
    )
    assert created.status_code == 201 and created.json()["enforce_read_only_replicas"] is False, created.text
