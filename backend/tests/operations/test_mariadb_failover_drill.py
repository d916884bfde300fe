"""A failover drill on real MariaDB 10.11 servers, through the API and the `mariadb` driver as Ferry's least-privilege
user, under a two-domain load writer that follows the writable master: the master fenced alive (read-only, its
sessions that bypass read-only ended) and failed over to a replica, RTO and RPO recorded (no acknowledged canary
lost), the old master rejoined as a read-only replica of the new master, and every statement the
writer was told had committed on every server exactly once, with equal checksums and no errant GTID; and one
stopped before the promotion (the candidate cannot apply what the fenced master has): undone, the master writable and
in service again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.conftest import LiveFactory
from tests.helpers import WebhookReceiver, finished, serve, step
from tests.mariadb_cluster import WAIT_S, MariadbCluster, eventually
from tests.mariadb_load import (
    MariadbLoadWriter,
    assert_nothing_acknowledged_lost,
    assert_one_master,
    checksums_equal,
    errant_everywhere,
    register_mariadb,
    shape,
)


async def test_a_failover_drill_under_load_loses_nothing_and_the_old_master_rejoins(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = await MariadbLoadWriter(cluster, clients=4, domains=2, rate=400).start()
        try:
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/runs",
                json={"kind": "failover", "candidate_strategy": "fixed", "candidate_registered_server_id": ids[2]},
            )
            assert response.status_code == 202, response.text
            operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
        finally:
            ledger = await writer.stop()
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[1]}")).json()

    assert (run["state"], run["passed"], run["reasons"], run["kind"]) == ("passed", True, [], "failover")
    assert {c["name"] for c in operation["result"]["checks"]} >= {"log_bin", "gtid_strict_mode", "ferry_privileges"}
    assert "made read-only before the promotion" in step(operation, "fence_old_master_first")["detail"]
    figures = run["failover"]
    assert 0 < run["rto_s"] == figures["rto_s"] < WAIT_S and 0 < figures["writer_rto_s"] < WAIT_S
    assert run["rpo_lost"] == 0 and figures["rpo_checked"] > 0 and figures["only_on_old_master"] == []
    writer_report = run["canary_writer"]
    assert (writer_report["lost"], writer_report["duplicated"], writer_report["verified"]) == (0, 0, True)
    assert [w["switch"] for w in writer_report["windows"]] == ["failover"]
    # The old master rejoined: read-only, replicating from the new master like the other replica.
    assert figures["rejoined"] is True and server["fenced"] is False
    servers = shape(cluster)
    port = str(cluster.server(2).port)
    assert servers[2] == ("0", []), servers
    for number in (1, 3):
        assert servers[number][0] == "1" and [c[1:4] for c in servers[number][1]] == [(port, "Yes", "Yes")], servers
    # The load writer moved to the new master; nothing it was told had committed is missing or applied twice.
    assert ledger.master_changes >= 1 and sum(ledger.acked.values()) > 0, ledger
    cluster.wait_converged()
    assert_nothing_acknowledged_lost(cluster, writer)
    await checksums_equal(cluster)
    assert errant_everywhere(cluster, 2) == {}


async def test_a_failover_drill_stopped_before_the_promotion_puts_the_master_back(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """The candidate's SQL thread is stopped by the pre-operation webhook (after the preflight, before the fence)
    while the writer writes: the candidate cannot apply what the fenced master has, the failover stops before the
    promotion and is undone — the master writable and taking the writer's writes again, the candidate replicating
    from it, nothing lost, nothing fenced."""
    cluster = mariadb_factory(3)

    async def stop_candidate(_: Any) -> int:
        await asyncio.to_thread(cluster.sql, 2, "STOP SLAVE SQL_THREAD;")
        return 200

    receiver = WebhookReceiver(stop_candidate)
    async with serve(receiver) as hook_url, live_app(switchover_catch_up_timeout_s=3.0) as live:
        cluster_id, ids = await register_mariadb(live.client, cluster, pre_operation_webhooks=[hook_url])
        writer = await MariadbLoadWriter(cluster, clients=4, domains=2, rate=400).start()
        try:
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/runs",
                json={"kind": "failover", "candidate_strategy": "fixed", "candidate_registered_server_id": ids[2]},
            )
            assert response.status_code == 202, response.text
            operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
            acked = sum(writer.ledger.acked.values())
            await eventually(
                "the writer's writes on the old master again", lambda: sum(writer.ledger.acked.values()) > acked + 20
            )
        finally:
            ledger = await writer.stop()
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[1]}")).json()

    assert len(receiver.calls) == 1 and operation["state"] == "undone", (operation["error"], operation["steps"])
    names = [s["name"] for s in operation["steps"]]
    assert step(operation, "candidate_applies_fenced_master")["state"] == "failed"
    assert "promote_candidate" not in names and names[-2:] == ["settle", "undo"], names
    assert "took no write" in step(operation, "settle")["detail"] and step(operation, "undo")["state"] == "passed"
    assert (run["state"], run["kind"]) == ("failed", "failover")
    assert any("did not apply what the fenced s1 (server_id 1) has" in r for r in run["reasons"]), run["reasons"]
    assert server["fenced"] is False
    # Put back: s1 the writable master again, both replicas following it, their threads running.
    assert_one_master(cluster, 1)
    assert ledger.unknown == {} and sum(ledger.acked.values()) > 0, ledger
    cluster.wait_converged()
    assert_nothing_acknowledged_lost(cluster, writer)
    await checksums_equal(cluster)
