"""While an operation holds a cluster, what it acts on stays as it read it: a cluster's settings and credentials
(PATCH) and a server's maintenance (PUT …/maintenance) are refused with 409 `operation_running`, naming the
operation, and nothing changes; once the operation ends they are accepted. The operation is one an instance holds
with a live lease, as the database records it (real PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update

from ferry_control.core.db import session_scope
from ferry_control.models import Operation, OperationLock, OperationState
from tests.conftest import LiveFactory

START = {"maintenance": True, "reason": "disk swap", "duration_s": 60}


async def hold(live: Any, cluster_id: int) -> int:
    """A running switchover holding the cluster with a lease of ten minutes; returns its id."""
    async with session_scope(live.app.state.sessionmaker) as session:
        operation = Operation(cluster_id=cluster_id, type="switchover", state=OperationState.running, params={},
                              result={}, steps=[], requester="another-operator")  # fmt: skip
        session.add(operation)
        await session.flush()
        now = datetime.now(UTC)
        await session.execute(
            update(OperationLock).where(OperationLock.cluster_id == cluster_id)
            .values(operation_id=operation.id, acquired_at=now, lease_expires_at=now + timedelta(minutes=10),
                    fencing_token=OperationLock.fencing_token + 1)
        )  # fmt: skip
        return operation.id


async def release(live: Any, cluster_id: int, operation_id: int) -> None:
    async with session_scope(live.app.state.sessionmaker) as session:
        await session.execute(
            update(Operation).where(Operation.id == operation_id).values(state=OperationState.succeeded)
        )
        await session.execute(
            update(OperationLock).where(OperationLock.cluster_id == cluster_id).values(operation_id=None)
        )


async def test_cluster_settings_and_maintenance_wait_for_the_running_operation(live_app: LiveFactory) -> None:
    async with live_app() as live:
        client = live.client
        cluster = (await client.post("/api/v1/clusters", json={"name": "busy"})).json()
        server = (
            await client.post(f"/api/v1/clusters/{cluster['id']}/servers", json={
                "name": "db", "host": "127.0.0.1", "protocol_port": 7301, "admin_port": 7401,
            })
        ).json()  # fmt: skip
        operation_id = await hold(live, cluster["id"])
        maintenance = f"/api/v1/clusters/{cluster['id']}/servers/{server['id']}/maintenance"
        attempts = {
            "cluster settings": await client.patch(
                f"/api/v1/clusters/{cluster['id']}", json={"auto_failover": True, "candidate_labels": ["az"]}
            ),
            "cluster credentials": await client.patch(
                f"/api/v1/clusters/{cluster['id']}", json={"db_user": "ferry", "db_password": "new-password"}
            ),
            "maintenance": await client.put(
                maintenance, json={"maintenance": True, "reason": "disk", "duration_s": 60}
            ),
        }
        for what, response in attempts.items():
            assert response.status_code == 409, (what, response.text)
            error = response.json()["error"]
            assert error["code"] == "operation_running" and error["details"]["operation_id"] == operation_id, error
        after = (await client.get(f"/api/v1/clusters/{cluster['id']}")).json()
        assert (after["auto_failover"], after["candidate_labels"], after["db_user_set"]) == (
            cluster["auto_failover"], cluster["candidate_labels"], False,
        )  # fmt: skip
        assert (await client.get(f"/api/v1/clusters/{cluster['id']}/servers/{server['id']}")).json()[
            "maintenance"
        ] is False

        await release(live, cluster["id"], operation_id)
        changed = await client.patch(f"/api/v1/clusters/{cluster['id']}", json={"candidate_labels": ["az"]})
        assert changed.status_code == 200 and changed.json()["candidate_labels"] == ["az"], changed.text
        started = await client.put(maintenance, json=START)
        assert started.status_code == 200 and started.json()["maintenance"] is True, started.text
