"""Drills: schedules with cron and a time zone (next run times, bad input refused precisely), run-now on a real
cluster (passes and stores its figures, switching back), a cluster with a broken replica (fails with the reason
and calls the webhook — a local receiver), the scheduler claiming a due schedule once across two instances, and a
replica delayed on purpose: never a rotation's candidate, and flagged with what it costs when a fixed plan names it;
under load, a drill named to it cannot fit its window, says so in numbers and changes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from ferry_control.services.drill_scheduler import DrillScheduler
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import (
    LOAD_FIELD,
    LOAD_TABLE,
    LoadWriter,
    WebhookReceiver,
    check,
    finished,
    register,
    run_operation,
    serve,
    topology,
    writable_master,
)
from tests.waiting import eventually


async def test_schedules_show_their_next_runs_in_their_time_zone(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/drills/schedules"
        created = await live.client.post(
            url, json={"name": "nightly", "cron": "30 2 * * *", "timezone": "Europe/Berlin", "switch_back": True}
        )
        assert created.status_code == 201, created.text
        schedule = created.json()
        runs = [datetime.fromisoformat(t) for t in schedule["next_runs"]]
        assert len(runs) == 5 and runs == sorted(runs)
        assert all(t.minute == 30 and t.hour in (0, 1) for t in runs), runs  # 02:30 in Berlin is 00:30/01:30 UTC
        assert datetime.fromisoformat(schedule["next_run_at"]) == runs[0]

        bad_cron = await live.client.post(url, json={"name": "x", "cron": "61 * * * *"})
        assert bad_cron.status_code == 400 and bad_cron.json()["error"]["code"] == "bad_cron"
        assert "'61 * * * *' is invalid: Bad minute" in bad_cron.json()["error"]["message"]
        bad_zone = await live.client.post(url, json={"name": "x", "cron": "0 3 * * *", "timezone": "Mars/Olympus"})
        assert bad_zone.status_code == 400 and "unknown time zone 'Mars/Olympus'" in bad_zone.json()["error"]["message"]
        fixed = await live.client.post(url, json={"name": "x", "cron": "0 3 * * *", "candidate_strategy": "fixed"})
        assert fixed.status_code == 422 and "needs candidate_registered_server_id" in fixed.json()["error"]["message"]
        unknown = await live.client.post(
            url,
            json={
                "name": "x",
                "cron": "0 3 * * *",
                "candidate_strategy": "fixed",
                "candidate_registered_server_id": 999,
            },
        )
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "server_not_found"

        disabled = await live.client.patch(f"{url}/{schedule['id']}", json={"enabled": False})
        assert disabled.json()["next_run_at"] is None and disabled.json()["next_runs"] == []


async def test_run_now_passes_and_stores_its_figures(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        async with live.app.state.bus.subscribe(cluster_id) as events:
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/runs",
                json={
                    "candidate_strategy": "fixed",
                    "candidate_registered_server_id": ids["replica2"],
                    "switch_back": True,
                },
            )
            assert response.status_code == 202, response.text
            run = response.json()
            operation = await finished(live.app, live.client, cluster_id, run["operation_id"])
            # The run's state changes were on the event stream.
            drill_states = []
            while "passed" not in drill_states:
                event = await asyncio.wait_for(events.next(), 30)
                if event.type == "drill":
                    assert event.data.drill_run_id == run["id"]
                    drill_states.append(event.data.state)
            assert drill_states == ["running", "passed"]
        assert operation["type"] == "drill" and operation["state"] == "succeeded", operation["error"]
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{run['id']}")).json()
        assert (run["state"], run["passed"], run["reasons"]) == ("passed", True, [])
        assert 0 < run["rto_s"] < 5 and run["catch_up_s"] >= 0
        details = run["details"]
        assert details["candidate_registered_server_id"] == ids["replica2"] and details["verified"] is True
        assert set(details["canaries"]) == {"0", "1", "2"}
        assert details["switch_back"]["unavailable_s"] > 0
        names = [s["name"] for s in operation["steps"]]
        for name in ("write_canaries", "canaries_replicated", "promote_candidate", "verify_canaries",
                     "verify_checksums", "verify_gtids", "switch_back_preflight"):  # fmt: skip
            assert name in names, names
        assert writable_master(ferryd.nodes) is ferryd.master  # switched back
        listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs")).json()
        assert [r["id"] for r in listed] == [run["id"]]
        metrics = (await live.client.get("/metrics")).text
        assert 'ferry_control_drill_runs_total{outcome="passed"} 1.0' in metrics


async def test_a_broken_replica_fails_the_drill_and_calls_the_webhook(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    ferryd.replica2.post("/v1/replication/main/stop", {})  # broken: it will not receive the canaries
    receiver = WebhookReceiver()
    async with serve(receiver) as hook_url, live_app(switchover_catch_up_timeout_s=2.0) as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = topology(ferryd.nodes)
        response = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/drills/runs",
            json={
                "candidate_strategy": "fixed",
                "candidate_registered_server_id": ids["replica1"],
                "webhook_url": hook_url,
            },
        )
        assert response.status_code == 202, response.text
        operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
        assert operation["state"] == "failed" and operation["error"].startswith("drill failed: ")
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()
        assert run["state"] == "failed" and run["passed"] is False
        assert any(
            "replica2 (server_id 3) did not receive the canaries" in r and "stopped" in r for r in run["reasons"]
        )
        assert len(receiver.calls) == 1
        call = receiver.calls[0]
        assert call["event"] == "drill_failed" and call["drill_run_id"] == run["id"]
        assert call["reasons"] == run["reasons"]
        # It failed before the switchover: the master did not move.
        assert topology(ferryd.nodes) == before


async def test_the_scheduler_claims_a_due_schedule_once_across_instances(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        schedule = (
            await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/schedules",
                json={"name": "hourly", "cron": "0 * * * *", "candidate_strategy": "rotation"},
            )
        ).json()
        due = datetime.fromisoformat(schedule["next_run_at"]) + timedelta(seconds=1)
        state = live.app.state
        first = DrillScheduler(state.sessionmaker, state.runner, live.settings, state.metrics)
        second = DrillScheduler(state.sessionmaker, state.runner, live.settings, state.metrics)
        created = await asyncio.gather(first.tick(due), second.tick(due))
        assert sorted(len(c) for c in created) == [0, 1], created
        assert await first.tick(due) == []
        run_id = next(c for c in created if c)[0]
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{run_id}")).json()
        assert run["requester"] == "scheduler" and run["schedule_id"] == schedule["id"]
        operation = await finished(live.app, live.client, cluster_id, run["operation_id"])
        assert operation["state"] == "succeeded", operation["error"]
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{run_id}")).json()
        assert run["passed"] is True and run["details"]["candidate_registered_server_id"] == ids["replica1"]
        moved = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/schedules/{schedule['id']}")).json()
        assert datetime.fromisoformat(moved["next_run_at"]) > due and moved["last_run_at"] is not None
        assert datetime.fromisoformat(moved["next_run_at"]) > datetime.now(UTC) - timedelta(hours=1)


async def test_a_drill_dry_run_is_a_switchover_dry_run_to_the_drills_candidate_and_records_no_run(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app(collector_enabled=True, poll_interval_s=0.2) as live:
        cluster_id, ids = await register(live.client, ferryd)
        base = f"/api/v1/clusters/{cluster_id}/drills"

        async def links_seen() -> bool:
            edges = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["edges"]
            return len([e for e in edges if e["running"]]) == 2

        await eventually("the collector to see both replicas replicating", links_seen)

        async def dry_run(body: dict[str, object]) -> dict[str, object]:
            response = await live.client.post(f"{base}/dry-run", json=body)
            assert response.status_code == 202, response.text
            return await finished(live.app, live.client, cluster_id, response.json()["id"])

        rotation = await dry_run({"candidate_strategy": "rotation", "switch_back": True})
        assert (rotation["type"], rotation["dry_run"], rotation["state"]) == ("switchover", True, "succeeded")
        first = min(ids["replica1"], ids["replica2"])
        assert rotation["params"]["candidate_registered_server_id"] == first
        plan = rotation["result"]["plan"]
        assert plan["candidate"].startswith("replica1") and plan["source"].startswith("master")
        assert set(plan["positions"]) >= {plan["source"], plan["candidate"]}

        fixed = await dry_run({"candidate_strategy": "fixed", "candidate_registered_server_id": ids["replica2"]})
        assert fixed["result"]["plan"]["candidate"].startswith("replica2")
        assert (await live.client.get(f"{base}/runs")).json() == [], "a dry run records no drill run"
        assert writable_master(ferryd.nodes) is ferryd.master, "nothing moved"

        refused = await live.client.post(f"{base}/dry-run", json={"schedule_id": 999})
        assert refused.status_code == 404 and "999" in refused.json()["error"]["message"]
        unknown = await live.client.post(
            f"{base}/dry-run", json={"candidate_strategy": "fixed", "candidate_registered_server_id": 999}
        )
        assert unknown.status_code == 404 and "999" in unknown.json()["error"]["message"]
        viewer = await live.client.post(
            f"{base}/dry-run", json={"candidate_strategy": "rotation"}, headers=live.tokens.header("viewer")
        )
        assert viewer.status_code == 403


async def test_a_rotation_passes_over_a_delayed_replica_and_a_dry_run_naming_one_says_what_it_costs(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """replica1 replicates an hour behind on purpose (delay_s 3600). A rotation drill's dry run takes replica2 though
    replica1's turn comes first; a fixed drill's dry run to replica1 (a switchover's) says in its advice and its
    candidate choice what that would cost — writes refused until it applied the master's last hour, over the
    budget, its delay gone after the move — without calling it stalled, and its plan has the master follow replica1
    over 'main' with replica1's settings less the delay; a switchover dry run left to choose takes replica2 and says
    why not replica1. Nothing moves."""
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    ferryd.replica1.post("/v1/replication/main/stop", {})
    ferryd.replica1.post("/v1/replication/main/change-master", {"master": ferryd.master.listen, "delay_s": 3600})
    ferryd.replica1.post("/v1/replication/main/start", {})
    async with live_app(collector_enabled=True, poll_interval_s=0.2) as live:
        cluster_id, ids = await register(live.client, ferryd)
        base = f"/api/v1/clusters/{cluster_id}/drills"

        async def delay_seen() -> bool:
            edges = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["edges"]
            delays = {
                e["replica_registered_server_id"]: (e["settings"] or {}).get("delay_s") for e in edges if e["running"]
            }
            return delays == {ids["replica1"]: 3600, ids["replica2"]: 0}

        await eventually("the collector to see both replicas replicating, replica1 with its delay", delay_seen)

        async def dry_run(body: dict[str, object]) -> dict[str, Any]:
            response = await live.client.post(f"{base}/dry-run", json=body)
            assert response.status_code == 202, response.text
            return await finished(live.app, live.client, cluster_id, response.json()["id"])

        rotation = await dry_run({"candidate_strategy": "rotation"})
        assert (
            ids["replica1"] < ids["replica2"]
            and rotation["params"]["candidate_registered_server_id"] == ids["replica2"]
        )
        assert not rotation["result"]["advice"], rotation["result"]

        fixed = await dry_run({"candidate_strategy": "fixed", "candidate_registered_server_id": ids["replica1"]})
        assert fixed["state"] == "succeeded", fixed
        master, replica1, replica2 = "master (server_id 1)", "replica1 (server_id 2)", "replica2 (server_id 3)"
        note = "replicates 1 h 00 min behind on purpose (delay_s 3600)"
        (advice,) = fixed["result"]["advice"]
        assert advice.startswith(f"{replica1} {note}: once {master} is read-only, {replica1} takes writes only after "
                                 f"applying what {master} wrote in its last 1 h 00 min"), advice  # fmt: skip
        assert "over the 10 s budget" in advice and "refuses having changed nothing" in advice, advice
        assert f"{master} follows it without a delay" in advice and "stalled" not in advice, advice
        chosen = check(fixed, "candidate_chosen")["detail"]
        assert chosen == (
            f"{replica1} is a replica of {master}; it {note}: it would take writes only after applying what {master} "
            "wrote in its last 1 h 00 min, and its delay ends with the move"
        ), chosen
        moved = {(m["server"], m["connection"]): m for m in fixed["result"]["plan"]["moved"]}
        assert set(moved) == {(master, "main"), (replica2, "main")}, moved
        follows = moved[(master, "main")]
        assert follows["master"] == replica1 and follows["not_carried"] == ["delay 1 h 00 min"], follows
        assert follows["settings_from"] == f"as on {replica1}'s 'main' to {master}, which is removed", follows
        assert not any(w.startswith("delay") for w in follows["carried"]), follows
        assert moved[(replica2, "main")]["settings_from"] == "its own, kept"

        best = await run_operation(live.app, live.client, cluster_id, "switchover", {"dry_run": True})
        assert best["state"] == "succeeded" and best["result"]["new_master_registered_server_id"] == ids["replica2"], (
            best
        )
        chosen = check(best, "candidate_chosen")["detail"]
        assert chosen.endswith(f"; never chosen automatically: {replica1} {note}"), chosen

        assert (await live.client.get(f"{base}/runs")).json() == [], "a dry run records no drill run"
        assert writable_master(ferryd.nodes) is ferryd.master, "nothing moved"


async def test_a_drill_that_cannot_fit_its_window_under_load_says_so_in_numbers_and_changes_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """Under a two-domain write load, a drill named to a candidate that applies nothing of it (replica1 replicates an
    hour behind on purpose) waits in its catch-up phase for the window to fit the budget, then fails at its prepare
    timeout: the run says why in numbers (the master's commit rate, the candidate's apply rate, how far behind, the
    window it would hold writes for against the budget), and no server was touched — no canary written, every node's
    role and connections as before, every acknowledged write of the load on every node."""
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    ferryd.replica1.post("/v1/replication/main/stop", {})
    ferryd.replica1.post("/v1/replication/main/change-master", {"master": ferryd.master.listen, "delay_s": 3600})
    ferryd.replica1.post("/v1/replication/main/start", {})
    async with live_app(switchover_prepare_timeout_s=2.0) as live:
        cluster_id, ids = await register(live.client, ferryd)
        writer = await LoadWriter.start(ferryd.nodes, clients=4, domains=2, rate=200.0)
        try:
            before = topology(ferryd.nodes)
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/runs",
                json={
                    "candidate_strategy": "fixed",
                    "candidate_registered_server_id": ids["replica1"],
                    "switch_back": True,
                },
            )
            assert response.status_code == 202, response.text
            operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
            after = topology(ferryd.nodes)
        finally:
            summary = await writer.stop()
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()
    assert operation["state"] == "failed", operation
    failure = operation["result"]["failure"]
    assert failure["kind"] == "refused" and failure["changed"] is False, (operation["error"], failure)
    names = [s["name"] for s in operation["steps"]]
    assert "catch_up_before_window" in names and "write_canaries" not in names, names
    assert (run["state"], run["passed"]) == ("failed", False), run
    reasons = " ".join(run["reasons"])
    assert "txn/s" in reasons and "transactions behind" in reasons, reasons
    assert "would hold writes" in reasons and "budget" in reasons, reasons
    assert after == before, "the drill changed nothing"
    assert writable_master(ferryd.nodes) is ferryd.master
    assert summary["unknown"] == {} and summary["refused"] == 0, summary
    async with await FerryProtocolClient.connect(ferryd.master.listen) as connection:
        for key, acked in summary["acked"].items():
            row = await connection.get(LOAD_TABLE, key)
            assert row is not None and row[LOAD_FIELD] == acked, (key, row, acked)
