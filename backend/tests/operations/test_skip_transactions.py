"""Skipping the transaction that stopped a replica, on real ferryd nodes: the driver's skip counter and the node's own
refusals (running, several domains, no such connection); the `skip_transactions` operation through the API — it
skips exactly the failing transaction, names its GTID and the data lost, and the replica replicates everything
after it; a dry run changes nothing; and every refusal (a running connection, an unknown one, a count out of range,
nothing waiting to be skipped) says why and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ferry_control.drivers.errors import ErrorKind, ServerConflict, ServerNotFound
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import ServerKind
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import connection, register, run_operation, step, stop_on_strict_mode


async def test_the_driver_sets_the_skip_counter_and_carries_the_nodes_refusals(
    settings: Any, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(1, domains=(1,))
    ferryd.converge()
    drivers = DriverFactory(settings)
    try:
        replica = drivers.for_address(ServerKind.ferry, ferryd.replica1.admin)
        with pytest.raises(ServerConflict) as running:
            await replica.skip_transactions("main", 1)
        assert (running.value.kind, running.value.code) == (ErrorKind.conflict, "conflict")
        assert "running" in running.value.message
        with pytest.raises(ServerNotFound):
            await replica.skip_transactions("nope", 1)

        await replica.stop_replication("main")
        await replica.skip_transactions("main", 2)
        (stopped,) = await replica.replica_connections()
        assert stopped.skip_counter == 2
        await replica.skip_transactions("main", 0)
        (cleared,) = await replica.replica_connections()
        assert cleared.skip_counter == 0

        # A start position with two domains: which transaction comes next is not defined (MariaDB's 1966).
        await replica.start_replication("main")
        ferryd.write(1, domains=(2,))
        ferryd.converge()
        await replica.stop_replication("main")
        with pytest.raises(ServerConflict) as domains:
            await replica.skip_transactions("main", 1)
        assert "domain" in domains.value.message
    finally:
        await drivers.aclose()


async def test_skipping_the_failing_transaction_names_it_and_the_replica_replicates_again(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    failing = await stop_on_strict_mode(ferryd)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        preview = await run_operation(
            live.app,
            live.client,
            cluster_id,
            "skip-transactions",
            {"registered_server_id": ids["replica1"], "dry_run": True},
        )
        assert preview["state"] == "succeeded", (preview["error"], preview["steps"])
        assert preview["result"]["skipped_gtids"] == [failing]
        assert preview["result"]["data_loss"].startswith(f"would lose: {failing} was skipped on replica1 (server_id 2)")
        assert connection(ferryd.replica1)["skip_counter"] == 0 and connection(ferryd.replica1)["running"] is False

        operation = await run_operation(
            live.app,
            live.client,
            cluster_id,
            "skip-transactions",
            {"registered_server_id": ids["replica1"], "count": 1},
        )
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert [s["name"] for s in operation["steps"]] == [
            "preflight", "identify", "pre_hooks", "skip", "start", "verify",
        ]  # fmt: skip
        result = operation["result"]
        assert result["skipped_gtids"] == [failing]
        assert result["skipped_gtids_source"] == "the binlog of master (server_id 1)"
        assert result["stopped_by"]["code"] == "STRICT_MODE"
        assert result["replicating"] is True and result["connection"] == "main"
        assert f"{failing} was skipped on replica1 (server_id 2)" in result["data_loss"]
        assert "never bring it back" in result["data_loss"]
        assert step(operation, "identify")["detail"]["error_gtid"] == failing

        replicated = connection(ferryd.replica1)
        assert replicated["running"] is True and replicated["last_error"] is None
        assert replicated["transactions_skipped"] == 1 and replicated["skip_counter"] == 0
        # Everything after the skipped transaction arrives; the skipped one's change never does.
        after = ferryd.master.increment("d1", "after", domain=1)
        ferryd.replica1.wait_for(after)
        assert ferryd.replica1.status()["gtid_slave_pos"] == after
        listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
        assert [(o["type"], o["dry_run"]) for o in listed] == [
            ("skip_transactions", False),
            ("skip_transactions", True),
        ]
        audit = (await live.client.get("/api/v1/audit", headers=live.tokens.header("admin"))).json()
        assert [e["action"] for e in audit if e["action"] == "skip_transactions"] == ["skip_transactions"] * 2


async def test_refusals_say_why_and_change_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(1, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/operations/skip-transactions"

        running = await live.client.post(url, json={"registered_server_id": ids["replica1"]})
        assert running.status_code == 409, running.text
        error = running.json()["error"]
        assert error["code"] == "connection_running"
        assert error["message"].startswith(
            "replica1 (server_id 2): connection 'main' is running (io connected, sql waiting_for_relay)"
        )
        unknown = await live.client.post(url, json={"registered_server_id": ids["replica1"], "connection": "other"})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "connection_not_found"
        assert "has no replication connection 'other' (it has: 'main')" in unknown.json()["error"]["message"]
        for count in (0, 101):
            bad = await live.client.post(url, json={"registered_server_id": ids["replica1"], "count": count})
            assert bad.status_code == 422 and "body.count" in bad.json()["error"]["message"], bad.text
        viewer = await live.client.post(
            url, json={"registered_server_id": ids["replica1"]}, headers=live.tokens.header("viewer")
        )
        assert viewer.status_code == 403
        assert (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json() == []
        assert connection(ferryd.replica1)["running"] is True and connection(ferryd.replica1)["skip_counter"] == 0

        # Stopped while caught up: nothing waits, so the counter would skip the master's next transaction.
        ferryd.replica1.post("/v1/replication/main/stop", {})
        idle = await run_operation(
            live.app, live.client, cluster_id, "skip-transactions", {"registered_server_id": ids["replica1"]}
        )
        assert idle["state"] == "failed"
        assert "only 0 transaction(s)" in idle["error"] and idle["result"]["failure"] == REFUSED
        assert connection(ferryd.replica1)["skip_counter"] == 0 and connection(ferryd.replica1)["running"] is False


async def test_a_skip_never_passes_over_another_domains_transaction(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """Replica 1 stopped on domain 1's transaction; the master's next one is domain 2's. Skipping two would lose
    domain 2's transaction with the failing one (a skip counter passes over whatever comes next): refused, nothing
    changed; skipping the failing one alone goes on, and domain 2's transaction is applied."""
    ferryd = ferryd_factory()
    failing = await stop_on_strict_mode(ferryd)
    other = ferryd.master.increment("d2", "healthy", domain=2)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        refused = await run_operation(
            live.app,
            live.client,
            cluster_id,
            "skip-transactions",
            {"registered_server_id": ids["replica1"], "count": 2},
        )
        assert refused["state"] == "failed", (refused["error"], refused["steps"])
        assert f"({failing}, {other}) span GTID domains 1, 2" in refused["error"], refused["error"]
        assert refused["result"]["failure"] == REFUSED, refused["result"]
        assert "skip" not in [s["name"] for s in refused["steps"]]
        stopped = connection(ferryd.replica1)
        assert stopped["skip_counter"] == 0 and stopped["running"] is False and stopped["transactions_skipped"] == 0

        operation = await run_operation(
            live.app,
            live.client,
            cluster_id,
            "skip-transactions",
            {"registered_server_id": ids["replica1"], "count": 1},
        )
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert operation["result"]["skipped_gtids"] == [failing]
        ferryd.replica1.wait_for(other)
