"""Health by meaning over real ferryd nodes: a connection's settings (delay, parallel apply, filters) in the
topology API, a replica delayed on purpose that holds transactions for its delay is neither stalled nor lagging, and
a SQL side that applies nothing while transactions wait is flagged with the reason the server gives."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
from fastapi import FastAPI

from ferry_control.services.link_health import STALLED_AFTER_S
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import register
from tests.waiting import eventually


async def topology_edge(app: FastAPI, client: httpx.AsyncClient, cluster_id: int, replica: int) -> dict[str, Any]:
    await app.state.collector.run_cycle()
    response = await client.get(f"/api/v1/clusters/{cluster_id}/topology")
    assert response.status_code == 200, response.text
    (edge,) = [
        e for e in response.json()["edges"] if e["replica_registered_server_id"] == replica and e["source"] == "replica"
    ]
    return edge  # type: ignore[no-any-return]


async def overview_of(client: httpx.AsyncClient, cluster_id: int) -> dict[str, Any]:
    items = {item["id"]: item for item in (await client.get("/api/v1/clusters/overview")).json()}
    return items[cluster_id]  # type: ignore[no-any-return]


async def test_a_connections_settings_are_in_the_topology(
    app: FastAPI, client: httpx.AsyncClient, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    cluster_id, ids = await register(client, ferryd, name="settings-shown")
    replica = ferryd.replica2
    replica.post("/v1/replication/main/stop", {})
    replica.post(
        "/v1/replication/main/change-master",
        {"master": ferryd.master.listen, "delay_s": 0, "parallel_mode": "optimistic", "workers": 4,
         "domain_workers_max": 2, "ignore_domain_ids": [7]},
    )  # fmt: skip
    replica.post("/v1/replication/main/start", {})

    edge = await topology_edge(app, client, cluster_id, ids["replica2"])
    assert edge["settings"] == {
        "delay_s": 0, "ignore_duplicates": False, "heartbeat_ms": edge["settings"]["heartbeat_ms"],
        "parallel_mode": "optimistic", "workers": 4, "domain_workers_max": 2, "semi_sync_replica": None,
        "filters": {"ignore_domain_ids": "7"},
    }  # fmt: skip
    assert edge["stall"] is None


async def test_a_replica_delayed_on_purpose_is_neither_stalled_nor_lagging_within_its_delay(
    app: FastAPI, client: httpx.AsyncClient, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)  # replicas read-only, as a deployment keeps them
    cluster_id, ids = await register(client, ferryd, name="delayed")
    delay_s = 600  # far beyond the test: every write waits its delay, unapplied, for the whole test
    replica = ferryd.replica2
    replica.post("/v1/replication/main/stop", {})
    replica.post("/v1/replication/main/change-master", {"master": ferryd.master.listen, "delay_s": delay_s})
    replica.post("/v1/replication/main/start", {})
    ferryd.write(5)

    async def holding() -> dict[str, Any] | None:
        edge = await topology_edge(app, client, cluster_id, ids["replica2"])
        behind = max((lag["transactions"] for lag in edge["lag"].values()), default=0)
        return edge if behind == 5 and edge["io_state"] == "connected" else None

    edge = await eventually("the delayed replica to hold the 5 writes", holding)
    assert edge["settings"]["delay_s"] == delay_s
    # Longer than a stall takes on a connection without delay: the delay's own wait is no stall.
    await eventually(
        "the writes to wait longer than a stall takes",
        lambda: _held_longer_than(app, client, cluster_id, ids["replica2"], STALLED_AFTER_S),
        timeout_s=STALLED_AFTER_S + 30,
    )
    overview = await overview_of(client, cluster_id)
    assert (overview["health"], overview["problems"], overview["warnings"]) == ("healthy", [], [])
    worst = overview["worst_lag"]
    assert (worst["delay_s"], worst["beyond_delay_s"], worst["level"], worst["transactions"]) == (
        delay_s,
        0.0,
        "none",
        5,
    )
    assert worst["words"].endswith("(delay 10 min 00 s, +0 s) · 5 txn"), worst


async def _held_longer_than(
    app: FastAPI, client: httpx.AsyncClient, cluster_id: int, replica: int, seconds: float
) -> bool:
    edge = await topology_edge(app, client, cluster_id, replica)
    assert edge["stall"] is None, edge
    return max(lag["seconds"] for lag in edge["lag"].values()) > seconds


async def test_a_sql_side_that_applies_nothing_while_transactions_wait_is_flagged_with_its_reason(
    app: FastAPI, client: httpx.AsyncClient, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)  # replicas read-only, as a deployment keeps them
    cluster_id, ids = await register(client, ferryd, name="stalled")
    replica = ferryd.replica2
    replica.post("/v1/replication/main/stop", {})
    replica.post("/v1/replication/main/start", {"sql_paused": True})
    ferryd.write(4)

    async def stalled() -> dict[str, Any] | None:
        edge = await topology_edge(app, client, cluster_id, ids["replica2"])
        return edge if edge["stall"] is not None else None

    edge = await eventually("the paused SQL side to be flagged", stalled, timeout_s=STALLED_AFTER_S + 30)
    assert edge["stall"]["transactions_waiting"] == 4
    assert edge["stall"]["no_progress_s"] >= STALLED_AFTER_S
    assert edge["stall"]["reason"] == "SQL side paused by the operator"
    overview = await overview_of(client, cluster_id)
    assert (overview["health"], overview["problems"]) == ("healthy", [])
    (problem,) = overview["warnings"]
    assert edge["stall"]["domains"] == [1]
    assert re.match(
        r"replica2 \(server_id \d+\): stalled in domain 1: 4 transactions waiting, no progress for ", problem
    )
    assert problem.endswith(" s (SQL side paused by the operator)")

    replica.post("/v1/replication/main/resume-sql", {})
    replica.wait_for(ferryd.master.status()["gtid_binlog_pos"])
    assert (await topology_edge(app, client, cluster_id, ids["replica2"]))["stall"] is None
