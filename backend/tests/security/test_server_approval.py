"""Credentials follow an address only with an admin's say: a server an operator registers, discovers or moves to an
address the deployment does not trust (`server_trusted_hosts`) is pending — never contacted, so the fleet's node
token (or a cluster's MariaDB login) never reaches it — until an admin approves it. And what a server answers is
stored bounded and stripped. The address someone made up is a fake node recording the credentials it is sent
(`hostile_servers.FakeNode`); the honest servers are a real ferryd cluster."""

from __future__ import annotations

import json

import httpx

from ferry_control.core.untrusted_text import STORED_TEXT_MAX
from tests.conftest import LiveFactory
from tests.ferryd_cluster import NODE_TOKEN, FerrydCluster, free_port_pair
from tests.hostile_servers import Answer, FakeNode, serving, valid_status


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def new_cluster(client: httpx.AsyncClient, name: str, **fields: object) -> int:
    response = await client.post("/api/v1/clusters", json={"name": name, **fields})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


async def server_of(client: httpx.AsyncClient, cluster_id: int, server_id: int) -> dict[str, object]:
    response = await client.get(f"/api/v1/clusters/{cluster_id}/servers/{server_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_an_operators_server_gets_no_credentials_until_an_admin_approves_it(live_app: LiveFactory) -> None:
    """The measured hole: an operator registers a listener of theirs and the next poll sends it the fleet's node
    token. Pending, it is never polled; once an admin approves it, it is (with the token, as every node is)."""
    node = FakeNode(Answer.json(valid_status()))
    async with live_app(server_trusted_hosts=[]) as live, serving(node) as url:
        operator, collector = live.client, live.app.state.collector
        cluster_id = await new_cluster(operator, "approvals")
        response = await operator.post(f"/api/v1/clusters/{cluster_id}/servers", json={
            "name": "made-up", "host": "127.0.0.1", "protocol_port": free_port_pair()[0], "admin_port": port_of(url),
        })  # fmt: skip
        assert response.status_code == 201, response.text
        server = response.json()
        assert (server["approved"], server["approved_by"], server["approved_at"]) == (False, None, None), server

        for _ in range(2):
            await collector.run_cycle()
        assert node.requests == 0 and node.authorizations == [], "a pending server was contacted"
        assert (await server_of(operator, cluster_id, server["id"]))["health"] == "unknown"

        approve = f"/api/v1/clusters/{cluster_id}/servers/{server['id']}/approve"
        async with live.client_as("viewer") as viewer:
            assert (await viewer.post(approve)).status_code == 403
        refused = await operator.post(approve)
        assert refused.status_code == 403, refused.text
        assert node.requests == 0
        async with live.client_as("admin") as admin:
            response = await admin.post(approve)
        assert response.status_code == 200, response.text
        assert response.json()["approved"] is True and response.json()["approved_by"] == "live-admin", response.json()

        await collector.run_cycle()
        assert node.authorizations and set(node.authorizations) == {f"Bearer {NODE_TOKEN}"}, node.authorizations
        assert (await server_of(operator, cluster_id, server["id"]))["health"] == "healthy"


async def test_an_operators_discovery_visits_no_address_it_made_up(live_app: LiveFactory) -> None:
    """Discovery from a seed at a made-up address: the seed is registered pending and never asked anything."""
    node = FakeNode(Answer.json(valid_status()))
    async with live_app(server_trusted_hosts=[]) as live, serving(node) as url:
        cluster_id = await new_cluster(live.client, "discover-made-up")
        response = await live.client.post(f"/api/v1/clusters/{cluster_id}/discovery", json={
            "host": "127.0.0.1", "protocol_port": free_port_pair()[0], "admin_port": port_of(url),
        })  # fmt: skip
        assert response.status_code == 200, response.text
        found = response.json()
        assert node.requests == 0 and node.authorizations == [], "discovery contacted a made-up address"
        assert found["seed"]["approved"] is False and found["added"] == [], found
        assert any("pending" in note["message"] for note in found["notes"]), found["notes"]


async def test_what_an_operators_discovery_finds_is_pending_and_not_visited(
    live_app: LiveFactory, ferryd: FerrydCluster
) -> None:
    """From an approved seed (a real replica an admin registered), an operator's discovery registers the master the
    seed names pending and does not visit it; an admin's discovery approves what it registers."""
    async with live_app(server_trusted_hosts=[]) as live:
        async with live.client_as("admin") as admin:
            offset = ferryd.master.admin_port - ferryd.master.protocol_port  # where the master's admin API is
            cluster_id = await new_cluster(admin, "discover", admin_port_offset=offset)
            seed = {"host": "127.0.0.1", "protocol_port": ferryd.replica1.protocol_port,
                    "admin_port": ferryd.replica1.admin_port}  # fmt: skip
            response = await admin.post(f"/api/v1/clusters/{cluster_id}/servers", json={"name": "seed", **seed})
            assert response.status_code == 201 and response.json()["approved_by"] == "live-admin", response.text

            response = await live.client.post(f"/api/v1/clusters/{cluster_id}/discovery", json=seed)
            assert response.status_code == 200, response.text
            found = response.json()
            master = next(s for s in found["added"] if s["protocol_port"] == ferryd.master.protocol_port)
            assert master["approved"] is False, master
            assert any(
                n["registered_server_id"] == master["id"] and "pending" in n["message"] for n in found["notes"]
            ), found
            assert master["reported_server_id"] is None, "the pending master was visited"
            # Its replicas were not listed either: only what the seed itself reported was registered.
            ports = {s["protocol_port"] for s in found["added"]}
            assert ferryd.replica2.protocol_port not in ports, found["added"]

            # The master stays pending through an admin's discovery too: an admin approves an address by name.
            response = await admin.post(f"/api/v1/clusters/{cluster_id}/discovery", json=seed)
            assert response.status_code == 200, response.text
            assert (await server_of(admin, cluster_id, master["id"]))["approved"] is False
            assert response.json()["added"] == [], response.json()

            response = await admin.post(f"/api/v1/clusters/{cluster_id}/servers/{master['id']}/approve")
            assert response.status_code == 200, response.text
            response = await admin.post(f"/api/v1/clusters/{cluster_id}/discovery", json=seed)
            assert response.status_code == 200, response.text
            added = {s["protocol_port"]: s for s in response.json()["added"]}
            assert added[ferryd.replica2.protocol_port]["approved_by"] == "live-admin", response.json()


async def test_an_operator_moving_a_server_leaves_it_pending(live_app: LiveFactory) -> None:
    """A server no credentials follow (a MariaDB server of a cluster without stored logins) may be moved by an
    operator, and is pending at its new address until an admin approves it; moving it back takes an approval too."""
    async with live_app(server_trusted_hosts=[]) as live:
        async with live.client_as("admin") as admin:
            cluster_id = await new_cluster(admin, "moves")
            response = await admin.post(f"/api/v1/clusters/{cluster_id}/servers", json={
                "name": "db", "kind": "mariadb", "host": "127.0.0.1", "protocol_port": 3306, "admin_port": 3306,
            })  # fmt: skip
            assert response.status_code == 201 and response.json()["approved"] is True, response.text
            server_id = response.json()["id"]
        path = f"/api/v1/clusters/{cluster_id}/servers/{server_id}"
        response = await live.client.patch(path, json={"labels": {"rack": "r1"}})
        assert response.status_code == 200 and response.json()["approved"] is True, "a change of labels is no move"
        response = await live.client.patch(path, json={"host": "127.0.0.2"})
        assert response.status_code == 200, response.text
        assert (response.json()["approved"], response.json()["approved_by"]) == (False, None), response.json()


async def test_the_allow_list_approves_what_an_operator_registers_there(live_app: LiveFactory) -> None:
    async with live_app(server_trusted_hosts=["127.0.0.0/8", "db.trusted.example"]) as live:
        cluster_id = await new_cluster(live.client, "trusted")
        expected = {"127.0.0.9": "server_trusted_hosts", "db.trusted.example": "server_trusted_hosts",
                    "db.other.example": None, "10.0.0.1": None}  # fmt: skip
        for port, (host, approver) in enumerate(expected.items(), start=7000):
            response = await live.client.post(f"/api/v1/clusters/{cluster_id}/servers", json={
                "host": host, "protocol_port": port, "admin_port": port + 100,
            })  # fmt: skip
            assert response.status_code == 201, response.text
            assert (response.json()["approved"], response.json()["approved_by"]) == (approver is not None, approver)


async def test_a_servers_error_text_is_stored_short_and_printable(live_app: LiveFactory) -> None:
    """A server answers a long refusal full of control characters, or a page of its own: a viewer reads at most a
    short line of it, with no control character, and never a body that is not a node's error."""
    long_message = "\x1b[31mred\x1b[0m\nline\u202e" + "x" * 5000
    answers = {
        "node error": Answer.json({"error": {"code": "c" * 500, "message": long_message}}, status=500),
        "another server's JSON": Answer.json({"detail": "SECRET-BANNER " * 200}, status=403),
    }
    async with live_app() as live:
        cluster_id = await new_cluster(live.client, "errors")
        for label, answer in answers.items():
            node = FakeNode(answer)
            async with serving(node) as url:
                response = await live.client.post(f"/api/v1/clusters/{cluster_id}/servers", json={
                    "name": label.replace(" ", "-").replace("'", ""), "host": "127.0.0.1",
                    "protocol_port": free_port_pair()[0], "admin_port": port_of(url),
                })  # fmt: skip
                assert response.status_code == 201, response.text
                server_id = response.json()["id"]
                await live.app.state.collector.run_cycle()
            async with live.client_as("viewer") as viewer:
                error = str((await server_of(viewer, cluster_id, server_id))["last_error"])
            assert 0 < len(error) <= STORED_TEXT_MAX, (label, len(error))
            assert error.isprintable(), (label, json.dumps(error))
            assert "SECRET-BANNER" not in error, (label, error)


async def test_an_operators_discovery_cannot_move_an_approved_seeds_admin_port(live_app: LiveFactory) -> None:
    async with live_app(server_trusted_hosts=[]) as live:
        async with live.client_as("admin") as admin:
            cluster_id = await new_cluster(admin, "seed-moves")
            seed = {"host": "127.0.0.1", "protocol_port": 7301, "admin_port": 7401}
            response = await admin.post(f"/api/v1/clusters/{cluster_id}/servers", json={"name": "seed", **seed})
            assert response.status_code == 201, response.text
            server_id = response.json()["id"]
        response = await live.client.post(f"/api/v1/clusters/{cluster_id}/discovery", json={**seed, "admin_port": 7402})
        assert response.status_code == 403, response.text
        assert response.json()["error"]["code"] == "address_change_needs_admin", response.json()
        after = await server_of(live.client, cluster_id, server_id)
        assert (after["admin_port"], after["approved_by"]) == (7401, "live-admin"), after
