"""Planned switchover against real three-node ferryd clusters: the moves and what they leave behind, the named
preflight checks (and that a refusal changes nothing), undo when the candidate cannot catch up, pre-hooks that abort,
dry runs, one operation per cluster (409) and Idempotency-Key."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ferry_control.drivers.ferry import FerryDriver
from ferry_control.schemas.events import OperationEvent
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED, UNDONE
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import (
    WAIT_S,
    WebhookReceiver,
    check,
    connection,
    register,
    run_operation,
    serve,
    step,
    topology,
    writable_master,
)
from tests.waiting import eventually

SWITCHOVER_STEPS = [
    "preflight", "catch_up_before_window", "pre_hooks", "old_master_read_only", "wait_in_flight_commits",
    "candidate_catch_up", "promote_candidate", "candidate_leaves_old_master", "repoint_replicas",
    "old_master_replicates", "verify",
]  # fmt: skip


async def test_switchover_moves_the_master_and_back(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(3, domains=(1, 2))
    stopped_at = ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover",
            {"candidate_registered_server_id": ids["replica1"], "expected_master_registered_server_id": ids["master"]},
        )  # fmt: skip
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert [s["name"] for s in operation["steps"]] == SWITCHOVER_STEPS
        assert all(s["state"] in ("passed", "skipped") and s["duration_s"] is not None for s in operation["steps"])
        result = operation["result"]
        assert (result["old_master_registered_server_id"], result["new_master_registered_server_id"]) == (
            ids["master"],
            ids["replica1"],
        )
        assert 0 < result["unavailable_s"] < 5 and result["catch_up_s"] >= 0
        # The old master said exactly when its last commit in flight had landed, and where writes stopped.
        assert result["position"] == stopped_at
        assert (
            "0 commit(s) in flight at read-only on, all landed" in step(operation, "wait_in_flight_commits")["detail"]
        )
        assert all(c["passed"] for c in result["checks"])
        assert {c["name"] for c in result["checks"]} >= {
            "expected_master", "master_identified", "master_healthy", "candidate_chosen", "candidate_eligible",
            "candidate_healthy", "candidate_replicating", "candidate_logs_replicated", "no_errant_gtids",
            "candidate_lag", "replicas_reachable",
        }  # fmt: skip
        new_master = ferryd.replica1
        assert writable_master(ferryd.nodes) is new_master
        shape = topology(ferryd.nodes)
        assert shape[1] == (True, [("main", new_master.listen, True)])
        assert shape[3] == (False, [("main", new_master.listen, True)])
        gtid = new_master.increment("after", "k", domain=1)
        assert gtid.startswith(f"1-{new_master.server_id}-")
        ferryd.master.wait_for(new_master.status()["gtid_binlog_pos"])
        ferryd.replica2.wait_for(new_master.status()["gtid_binlog_pos"])

        # Back again, letting the orchestrator choose: both replicas are level, the lower id wins ties.
        back = await run_operation(live.app, live.client, cluster_id, "switchover", {})
        assert back["state"] == "succeeded", back
        assert check(back, "candidate_chosen")["passed"]
        assert back["result"]["candidate_chosen_by"] == "orchestrator"
        assert back["result"]["old_master_registered_server_id"] == ids["replica1"]
        assert back["result"]["new_master_registered_server_id"] == ids["master"]
        assert writable_master(ferryd.nodes) is ferryd.master

        listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
        assert [o["id"] for o in listed] == [back["id"], operation["id"]]


async def test_a_replica_that_was_master_before_follows_the_next_master_from_its_own_transactions(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """The first master writes domain 1, hands over, and the second master writes only domain 2: the first one's
    newest GTID in domain 1 is its own, beyond its gtid_slave_pos there. At the next switchover it must follow the
    new master from its current_pos — from its slave_pos it would be sent its own transactions again and stop
    (strict mode: not above what it has)."""
    ferryd = ferryd_factory()
    ferryd.write(3, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        first = await run_operation(live.app, live.client, cluster_id, "switchover",
                                    {"candidate_registered_server_id": ids["replica1"]})  # fmt: skip
        assert first["state"] == "succeeded", (first["error"], first["steps"])
        ferryd.replica1.increment("second", "k", domain=2)
        ferryd.converge()
        second = await run_operation(live.app, live.client, cluster_id, "switchover",
                                     {"candidate_registered_server_id": ids["replica2"]})  # fmt: skip
        assert second["state"] == "succeeded", (second["error"], second["steps"])
        repointed = step(second, "repoint_replicas")["detail"]["repointed"]
        assert any("(current_pos)" in moved for moved in repointed), repointed
        gtid = ferryd.replica2.increment("third", "k", domain=1)
        ferryd.master.wait_for(ferryd.replica2.status()["gtid_binlog_pos"])
        main = connection(ferryd.master)
        assert main["running"] and main["master"] == ferryd.replica2.listen, main
        assert gtid in ferryd.master.status()["gtid_binlog_pos"]


async def test_dry_run_runs_the_preflight_only_and_the_stream_shows_its_steps(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = topology(ferryd.nodes)
        async with live.app.state.bus.subscribe(cluster_id) as events:
            operation = await run_operation(
                live.app, live.client, cluster_id, "switchover",
                {"candidate_registered_server_id": ids["replica2"], "dry_run": True},
            )  # fmt: skip
            seen = []
            while not seen or seen[-1].state == "running":
                event = await asyncio.wait_for(events.next(), 30)
                if isinstance(event.data, OperationEvent) and event.data.operation_id == operation["id"]:
                    seen.append(event.data)
        # The stream showed the step running, then passed, then the final state.
        assert [(e.state, [(s.name, s.state) for s in e.steps or []]) for e in seen] == [
            ("running", []),
            ("running", [("preflight", "running")]),
            ("running", [("preflight", "passed")]),
            ("succeeded", [("preflight", "passed")]),
        ]
        assert operation["state"] == "succeeded" and operation["dry_run"] is True
        assert [s["name"] for s in operation["steps"]] == ["preflight"]
        assert all(c["passed"] for c in operation["result"]["checks"])
        assert topology(ferryd.nodes) == before


async def assert_refused(
    live: Any, cluster_id: int, ferryd: FerrydCluster, body: dict[str, Any], failing: str
) -> dict[str, Any]:
    before = topology(ferryd.nodes)
    operation = await run_operation(live.app, live.client, cluster_id, "switchover", body)
    assert operation["state"] == "failed", operation
    assert [s["name"] for s in operation["steps"]] == ["preflight"]
    assert not check(operation, failing)["passed"], operation["result"]["checks"]
    assert failing in operation["error"] and operation["result"]["failure"] == REFUSED
    assert topology(ferryd.nodes) == before
    return operation


async def test_refusals_name_the_failing_check_and_change_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)

        # Not replicating: its connection is stopped.
        ferryd.replica1.post("/v1/replication/main/stop", {})
        refused = await assert_refused(
            live, cluster_id, ferryd, {"candidate_registered_server_id": ids["replica1"]}, "candidate_replicating"
        )
        assert "running=False" in check(refused, "candidate_replicating")["detail"]
        ferryd.replica1.post("/v1/replication/main/start", {})
        ferryd.converge()

        # Errant GTID: a transaction written on the replica itself, in a domain the master also writes.
        errant = ferryd.replica2.increment("errant", "k", domain=2)
        refused = await assert_refused(
            live, cluster_id, ferryd, {"candidate_registered_server_id": ids["replica2"]}, "no_errant_gtids"
        )
        detail = check(refused, "no_errant_gtids")["detail"]
        assert f"domain 2: {errant}" in detail and "written by the candidate itself" in detail

        # A window that cannot fit: a delayed replica that has not applied the last 5 transactions of domain 1. Lag
        # refuses nothing by itself; the catch-up before the window waits (bounded) and then refuses in numbers.
        ferryd.replica1.post("/v1/replication/main/stop", {})
        ferryd.replica1.post("/v1/replication/main/change-master", {"master": ferryd.master.listen, "delay_s": 3600})
        ferryd.replica1.post("/v1/replication/main/start", {})
        ferryd.write(5, domains=(1,))
        before = topology(ferryd.nodes)
        body = {"candidate_registered_server_id": ids["replica1"], "max_window_s": 2, "prepare_timeout_s": 1}
        refused = await run_operation(live.app, live.client, cluster_id, "switchover", body)
        assert refused["state"] == "failed", refused
        assert [s["name"] for s in refused["steps"]] == ["preflight", "catch_up_before_window"]
        assert (
            check(refused, "candidate_lag")["passed"]
            and "5 transactions in domain 1" in check(refused, "candidate_lag")["detail"]
        )
        error = refused["error"]
        assert refused["result"]["failure"] == REFUSED, refused["result"]
        assert "replica1 (server_id 2) applies 0 txn/s" in error, error
        assert "master (server_id 1) commits 0 txn/s in domain 1" in error, error
        assert "5 transactions behind" in error and "delayed replica" in error and "over the 2 s budget" in error
        assert topology(ferryd.nodes) == before

        # The expected master is not the master.
        refused = await assert_refused(
            live, cluster_id, ferryd,
            {"candidate_registered_server_id": ids["replica1"],
             "expected_master_registered_server_id": ids["replica2"]}, "expected_master",
        )  # fmt: skip


async def test_undo_when_the_candidate_cannot_catch_up(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """The pre-hook (a local receiver) breaks the candidate's replication mid-switchover — it keeps running but
    delays everything by an hour — and writes one more transaction: the candidate never reaches P, the wait times
    out, and the undo puts the old master back to writable with the topology as before."""
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    ferryd.converge()

    async def break_candidate(payload: dict[str, Any]) -> int:
        def work() -> None:
            ferryd.replica1.post("/v1/replication/main/stop", {})
            ferryd.replica1.post(
                "/v1/replication/main/change-master", {"master": ferryd.master.listen, "delay_s": 3600}
            )
            ferryd.replica1.post("/v1/replication/main/start", {})
            ferryd.master.increment("late", "k", domain=1)

        await asyncio.to_thread(work)
        return 200

    receiver = WebhookReceiver(break_candidate)
    async with serve(receiver) as hook_url, live_app(switchover_catch_up_timeout_s=2.0) as live:
        cluster_id, ids = await register(live.client, ferryd, pre_operation_webhooks=[hook_url])
        before = topology(ferryd.nodes)
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]}
        )
        assert operation["state"] == "undone", operation
        assert "did not reach" in operation["error"] and "timed out after 2.0 s" in operation["error"]
        assert operation["result"]["failure"] == UNDONE, operation["result"]
        catch_up = step(operation, "candidate_catch_up")
        assert catch_up["state"] == "failed" and catch_up["duration_s"] >= 2.0
        assert step(operation, "undo")["state"] == "passed"
        assert [s["name"] for s in operation["steps"]][-1] == "undo"
        assert (
            receiver.calls[0]["stage"] == "pre"
            and receiver.calls[0]["new_master_registered_server_id"] == ids["replica1"]
        )
        assert topology(ferryd.nodes) == before
        assert writable_master(ferryd.nodes) is ferryd.master
        ferryd.master.increment("after_undo", "k", domain=1)


async def test_undo_when_a_commit_stays_in_flight_after_read_only(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """The master waits for three semi-sync confirmations but has two replicas: the pre-hook starts a commit that
    stays in flight for the semi-sync timeout. The exact wait for commits in flight gives up after its bound, and
    the undo puts the old master back to writable; the commit lands afterwards, as it would have anyway."""
    ferryd = ferryd_factory(
        master_args=("--durability", "local+network", "--semi-sync-replicas", "3", "--semi-sync-timeout-ms", "8000")
    )
    stuck: list[asyncio.Task[str]] = []

    async def commit_in_flight(_: dict[str, Any]) -> int:
        stuck.append(asyncio.create_task(asyncio.to_thread(ferryd.master.increment, "stuck", "k", domain=1)))
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while ferryd.master.status()["commits_in_flight"] != 1:
            assert asyncio.get_running_loop().time() < deadline, f"the commit did not get in flight within {WAIT_S} s"
            await asyncio.sleep(0.01)
        return 200

    receiver = WebhookReceiver(commit_in_flight)
    async with serve(receiver) as hook_url, live_app(in_flight_wait_max_s=1.0) as live:
        cluster_id, ids = await register(live.client, ferryd, pre_operation_webhooks=[hook_url])
        before = topology(ferryd.nodes)
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]}
        )
        assert operation["state"] == "undone", operation
        error = operation["error"]
        assert "client writes did not stop within 1.0 s of read-only on" in error, error
        assert "1 client commit(s) admitted before read-only went on were still in flight after 1000 ms" in error
        assert operation["result"]["failure"] == UNDONE, operation["result"]
        assert step(operation, "wait_in_flight_commits")["state"] == "failed"
        assert step(operation, "undo")["state"] == "passed"
        assert topology(ferryd.nodes) == before
        gtid = await stuck[0]
        assert gtid.startswith("1-1-")
        # The count lets the commit go just after its answer is sent (ferry-core's commit queue): soon, not at once.
        await eventually(
            "the landed commit counted out of the master's commits in flight",
            lambda: ferryd.master.status()["commits_in_flight"] == 0,
            in_thread=True,
        )


async def test_a_driver_that_cannot_count_commits_in_flight_falls_back_to_a_still_position(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(FerryDriver, "counts_commits_in_flight", False)
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    stopped_at = ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica2"]}
        )
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        detail = step(operation, "wait_in_flight_commits")["detail"]
        assert "position still for 50 ms (the server does not count commits in flight)" in detail, detail
        assert operation["result"]["position"] == stopped_at
        assert writable_master(ferryd.nodes) is ferryd.replica2


async def test_a_failing_pre_hook_aborts_before_any_change(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()

    async def refuse(_: dict[str, Any]) -> int:
        return 503

    receiver = WebhookReceiver(refuse)
    async with serve(receiver) as hook_url, live_app(pre_operation_webhooks=[hook_url]) as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = topology(ferryd.nodes)
        operation = await run_operation(live.app, live.client, cluster_id, "switchover", {})
        assert operation["state"] == "failed"
        assert "pre-operation webhook" in operation["error"] and "answered 503" in operation["error"]
        assert [s["name"] for s in operation["steps"]] == ["preflight", "catch_up_before_window", "pre_hooks"]
        assert topology(ferryd.nodes) == before


async def test_one_operation_per_cluster_and_idempotency_keys(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/operations/switchover"
        first, second = await asyncio.gather(
            live.client.post(url, json={"candidate_registered_server_id": ids["replica1"]}),
            live.client.post(url, json={"candidate_registered_server_id": ids["replica2"]}),
        )
        assert sorted([first.status_code, second.status_code]) == [202, 409], (first.text, second.text)
        accepted, refused = (first, second) if first.status_code == 202 else (second, first)
        running = accepted.json()["id"]
        error = refused.json()["error"]
        assert error["code"] == "operation_running" and error["details"]["operation_id"] == running
        assert f"operation {running} (switchover" in error["message"]
        await live.app.state.runner.wait(running)

        headers = {"Idempotency-Key": "retry-me-0001"}
        body = {"candidate_registered_server_id": ids["master"]}
        once = await live.client.post(url, json=body, headers=headers)
        again = await live.client.post(url, json=body, headers=headers)
        assert once.status_code == again.status_code == 202
        assert once.json()["id"] == again.json()["id"] and again.headers["Idempotent-Replayed"] == "true"
        await live.app.state.runner.wait(once.json()["id"])
        other = await live.client.post(url, json={"candidate_registered_server_id": ids["replica2"]}, headers=headers)
        assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_key_reused"
        operations = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
        assert len(operations) == 2
        # Keys are per token: another token's same key starts its own operation, never replays this one's.
        async with live.client_as("admin") as admin:
            theirs = await admin.post(url, json={"candidate_registered_server_id": ids["replica2"], "dry_run": True},
                                      headers=headers)  # fmt: skip
        assert theirs.status_code == 202 and theirs.json()["id"] != once.json()["id"], theirs.text
        assert "Idempotent-Replayed" not in theirs.headers
