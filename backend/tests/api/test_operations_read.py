"""Operations, read side: a cluster's operations newest first, paged, and one operation with its steps."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.main import create_app
from ferry_control.models import Operation, OperationState
from ferry_control.repositories.operations import OperationRepository
from ferry_control.schemas.events import EventType
from ferry_control.schemas.operation import PARAMS, RESULTS


async def test_operations_are_listed_newest_first_and_read_with_their_steps(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    cluster = (await client.post("/api/v1/clusters", json={"name": "ops"})).json()
    repository = OperationRepository(session)
    step = {
        "name": "preflight",
        "state": "passed",
        "started_at": "2026-11-21T13:00:00Z",
        "finished_at": "2026-11-21T13:00:00.200000Z",
        "duration_s": 0.2,
        "detail": None,
    }
    made = [
        await repository.add(
            Operation(cluster_id=cluster["id"], type="switchover", requester="alice", state=OperationState.succeeded,
                      steps=[step], params={"candidate_registered_server_id": n}, idempotency_key=f"key-{n}",
                      finished_at=datetime.now(UTC))
        )
        for n in range(3)
    ]  # fmt: skip
    await session.commit()

    listed = (await client.get(f"/api/v1/clusters/{cluster['id']}/operations", params={"limit": 2})).json()
    assert [o["id"] for o in listed] == [made[2].id, made[1].id]
    older = (await client.get(f"/api/v1/clusters/{cluster['id']}/operations", params={"before_id": made[1].id})).json()
    assert [o["id"] for o in older] == [made[0].id]
    one = (await client.get(f"/api/v1/clusters/{cluster['id']}/operations/{made[0].id}")).json()
    assert (one["type"], one["state"], one["steps"], one["idempotency_key"]) == (
        "switchover",
        "succeeded",
        [step],
        "key-0",
    )


async def test_operations_are_filtered_by_type_and_dry_run(client: httpx.AsyncClient, session: AsyncSession) -> None:
    cluster = (await client.post("/api/v1/clusters", json={"name": "ops-filtered"})).json()
    repository = OperationRepository(session)
    made = {
        name: await repository.add(
            Operation(cluster_id=cluster["id"], type=type_, requester="alice", state=OperationState.succeeded,
                      dry_run=dry_run, steps=[], params={}, finished_at=datetime.now(UTC))
        )
        for name, type_, dry_run in [
            ("switchover", "switchover", False), ("preview", "switchover", True), ("repoint", "repoint", False),
            ("failover", "failover", False), ("drill", "drill", False),
        ]
    }  # fmt: skip
    await session.commit()
    url = f"/api/v1/clusters/{cluster['id']}/operations"

    both = await client.get(url, params=[("type", "switchover"), ("type", "failover"), ("dry_run", "false")])
    assert [o["id"] for o in both.json()] == [made["failover"].id, made["switchover"].id]
    previews = await client.get(url, params={"dry_run": "true"})
    assert [o["id"] for o in previews.json()] == [made["preview"].id]
    assert len((await client.get(url)).json()) == 5
    assert (await client.get(url, params={"type": "no_such_type"})).status_code == 422


async def test_rows_stored_before_the_typed_models_read_the_same(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    """Steps written with `+00:00` times, plans with `[server_id, connection]` pairs, keys no model knows (an older
    version's) and the ids of registered servers under their older names (`server_id`, `…_server_id`) read as the
    type's models: the same facts, times in one form, the ids under their names now (`registered_server_id`)."""
    cluster = (await client.post("/api/v1/clusters", json={"name": "ops-stored"})).json()
    step = {
        "name": "reconcile",
        "state": "passed",
        "started_at": "2026-11-21T13:00:00+00:00",
        "finished_at": "2026-11-21T13:00:00.500000+00:00",
        "duration_s": None,
        "detail": {"done": [], "problems": []},
    }
    result = {
        "old_master_server_id": 1, "new_master_server_id": 2, "unavailable_s": 0.41, "a_key_of_an_older_version": 1,
        "switch": {"old_master_server_id": 1, "new_master_server_id": 2, "connection": "main",
                   "old_master_was_read_only": False, "candidate_was_read_only": True, "others": [[3, "main"]]},
        "reconciled": {"at": "2026-11-21T13:00:00.500000+00:00", "found": None, "done": [], "problems": []},
    }  # fmt: skip
    stored = await OperationRepository(session).add(
        Operation(cluster_id=cluster["id"], type="switchover", requester="alice", state=OperationState.interrupted,
                  steps=[step], params={"candidate_server_id": 2}, result=result, finished_at=datetime.now(UTC))
    )  # fmt: skip
    await session.commit()

    one = (await client.get(f"/api/v1/clusters/{cluster['id']}/operations/{stored.id}")).json()
    assert one["steps"] == [
        {**step, "started_at": "2026-11-21T13:00:00Z", "finished_at": "2026-11-21T13:00:00.500000Z"}
    ]
    assert (one["result"]["unavailable_s"], one["result"]["new_master_registered_server_id"]) == (0.41, 2)
    assert one["result"]["switch"]["others"] == [{"registered_server_id": 3, "connection": "main"}]
    assert one["result"]["switch"]["old_master_registered_server_id"] == 1
    assert "old_master_server_id" not in one["result"] and "old_master_server_id" not in one["result"]["switch"]
    assert one["result"]["reconciled"]["at"] == "2026-11-21T13:00:00.500000Z"
    assert "a_key_of_an_older_version" not in one["result"]
    assert one["params"] == {
        "candidate_registered_server_id": 2, "expected_master_registered_server_id": None,
        "source_registered_server_id": None, "max_window_s": None, "prepare_timeout_s": None,
    }  # fmt: skip


def test_each_operation_type_has_its_result_model_in_the_openapi_schema() -> None:
    """`OperationRead` is a union on `type`; every member names its type's parameters and result, and the event
    stream documents each event type's data."""
    schema = create_app(Settings(environment="development")).openapi()
    components = schema["components"]["schemas"]
    members = components["OperationRead"]["discriminator"]["mapping"]
    assert set(members) == set(PARAMS) == set(RESULTS)
    for type_, ref in members.items():
        member = components[ref.rsplit("/", 1)[1]]["properties"]
        assert member["type"]["const"] == type_
        assert any(r.get("$ref", "").endswith(RESULTS[type_].__name__) for r in member["result"]["anyOf"]), type_
    stream = schema["paths"]["/api/v1/clusters/{cluster_id}/events"]["get"]["responses"]["200"]["content"]
    assert stream["text/event-stream"]["schema"]["$ref"].endswith("ClusterEventData")
    events = components["ClusterEventData"]["discriminator"]["mapping"]
    assert set(events) == {e.value for e in EventType}
