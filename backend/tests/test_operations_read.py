"""Operations, read side: a cluster's operations newest first, paged, and one operation with its steps."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import Operation, OperationState
from ferry_control.repositories.operations import OperationRepository


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
                      steps=[step], params={"candidate_server_id": n}, idempotency_key=f"key-{n}",
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
