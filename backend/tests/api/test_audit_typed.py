"""The audit log typed and filtered, over real ferryd nodes and PostgreSQL: a switchover's dry run and a real
operation each link the operation they started (the dry run marked as such, with its old → new master by label); a
token, a cluster and a server change are each in the global log; the filters by actor, action, cluster, server and
time narrow it, and bad filters are refused precisely. Also: the operations list accepts every operation type at once
(the lag charts ask for all of them)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

import httpx

from ferry_control.api.operations import OperationTypeName
from tests.conftest import LiveFactory, Tokens
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import register
from tests.waiting import eventually


async def audit(client: httpx.AsyncClient, **filters: Any) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/audit", params={"limit": 1000, **filters})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def finished(client: httpx.AsyncClient, cluster_id: int, operation_id: int) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        read = (await client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        return read if read["state"] not in ("pending", "running") else None

    return await eventually(f"operation {operation_id} to end", done)


async def test_rows_are_typed_link_their_operation_and_are_filtered(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        await typed_and_filtered(live.client, live.tokens, ferryd)


async def typed_and_filtered(client: httpx.AsyncClient, tokens: Tokens, ferryd: FerrydCluster) -> None:
    started = datetime.now(UTC)
    cluster_id, ids = await register(client, ferryd, name="audited")
    ferryd.converge()
    admin = {"Authorization": f"Bearer {tokens.admin}"}
    viewer = {"Authorization": f"Bearer {tokens.viewer}"}

    # A switchover's dry run, and an operation that runs for real.
    dry = await client.post(
        f"/api/v1/clusters/{cluster_id}/operations/switchover",
        json={
            "dry_run": True,
            "candidate_registered_server_id": ids["replica1"],
            "expected_master_registered_server_id": ids["master"],
        },
    )
    assert dry.status_code == 202, dry.text
    await finished(client, cluster_id, dry.json()["id"])
    run = await client.post(
        f"/api/v1/clusters/{cluster_id}/operations/read-only",
        json={"registered_server_id": ids["replica2"], "read_only": True},
    )
    assert run.status_code == 202, run.text
    await finished(client, cluster_id, run.json()["id"])
    # A token, a cluster and a server change; and a refusal.
    token = await client.post("/api/v1/tokens", json={"name": "audited-ci", "role": "viewer"}, headers=admin)
    assert token.status_code == 201, token.text
    assert (await client.patch(f"/api/v1/clusters/{cluster_id}", json={"description": "audited"})).status_code == 200
    patched = await client.patch(
        f"/api/v1/clusters/{cluster_id}/servers/{ids['replica1']}", json={"promotion_rule": "prefer"}
    )
    assert patched.status_code == 200, patched.text
    refused = await client.patch(f"/api/v1/clusters/{cluster_id}", json={"description": "no"}, headers=viewer)
    assert refused.status_code == 403

    topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
    labels = {node["registered_server_id"]: node["label"] for node in topology["nodes"]}
    (dry_row,) = await audit(client, action="switchover", cluster_id=cluster_id)
    assert dry_row["kind"] == "dry_run" and dry_row["operation_id"] == dry.json()["id"]
    assert dry_row["operation"] | {"state": None} == {
        "id": dry.json()["id"], "type": "switchover", "dry_run": True, "state": None,
        "old_master": labels[ids["master"]], "new_master": labels[ids["replica1"]],
    }  # fmt: skip
    (run_row,) = await audit(client, action="read_only", cluster_id=cluster_id)
    assert (run_row["kind"], run_row["operation"]["id"], run_row["operation"]["dry_run"]) == (
        "run", run.json()["id"], False
    )  # fmt: skip
    assert run_row["operation"]["old_master"] is None and run_row["operation"]["new_master"] is None

    # Token changes are in the global log (no cluster), by the admin who made them.
    (token_row,) = await audit(client, action="create_token", actor="live-admin", since=started.isoformat())
    assert (token_row["kind"], token_row["cluster_id"], token_row["status_code"]) == ("change", None, 201)
    # Cluster changes, the refusal typed as such.
    updates = await audit(client, action="update_cluster", cluster_id=cluster_id)
    assert [(r["kind"], r["actor"]) for r in updates] == [("refused", "live-viewer"), ("change", "live-operator")]
    # By server: its registration and its change, no other server's rows.
    by_server = await audit(client, registered_server_id=ids["replica1"])
    assert [(r["action"], r["kind"]) for r in by_server] == [("update_server", "change"), ("create_server", "change")]
    assert by_server[1]["details"]["server"].startswith("replica1")
    # By actor: only that token's rows.
    assert {r["actor"] for r in await audit(client, cluster_id=cluster_id, actor="live-viewer")} == {"live-viewer"}
    # By time: nothing before the test began, everything of the test in its window.
    assert await audit(client, cluster_id=cluster_id, until=(started - timedelta(seconds=1)).isoformat()) == []
    window = await audit(client, cluster_id=cluster_id, since=started.isoformat(), until=datetime.now(UTC).isoformat())
    assert {"create_server", "switchover", "read_only", "update_cluster", "update_server"} <= {
        r["action"] for r in window
    }

    # Bad filters: precise refusals.
    naive = await client.get("/api/v1/audit", params={"since": "2026-11-28T13:00:00"})
    assert (naive.status_code, naive.json()["error"]["code"]) == (400, "naive_datetime")
    backwards = await client.get(
        "/api/v1/audit", params={"since": "2026-11-28T13:00:00Z", "until": "2026-11-28T12:00:00Z"}
    )
    assert (backwards.status_code, backwards.json()["error"]["code"]) == (400, "empty_range")
    assert (await client.get("/api/v1/audit", params={"registered_server_id": 0})).status_code == 422
    old = await client.get("/api/v1/audit", params={"server_id": 3})
    assert old.status_code == 422
    assert old.json()["error"]["message"].startswith("query.server_id: server_id was renamed registered_server_id: ")


async def test_the_operations_list_takes_every_type_at_once(client: httpx.AsyncClient) -> None:
    cluster = (await client.post("/api/v1/clusters", json={"name": "every-type"})).json()
    types = list(get_args(OperationTypeName))
    response = await client.get(
        f"/api/v1/clusters/{cluster['id']}/operations", params={"type": types, "dry_run": "false"}
    )
    assert response.status_code == 200, response.text
    assert response.json() == []
    too_many = await client.get(f"/api/v1/clusters/{cluster['id']}/operations", params={"type": [*types, "drill"]})
    assert too_many.status_code == 422
