"""Failover drills against real ferryd clusters, each under a two-domain load writer that follows the master: the
master failed over alive (fenced: drained, read-only, never killed) to the candidate, RTO and RPO recorded (no
acknowledged canary lost: a live fence loses nothing), the old master rejoined as a read-only replica of the new one
and no longer fenced, every increment the load writer was told had committed on every node exactly once; a schedule
of the failover kind, whose run switches back to the original master; and the refusal — in the dry run and at run
time, nothing changed — of a cluster where no replica can take over keeping every domain (one filters a domain
out, the other must never be promoted), with the kind itself checked on input; and `ferryctl drills run --kind
failover`, its RTO and RPO in the run and the history."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ferry_control.ctl.errors import ExitCode
from ferry_control.drivers.base import ChangeMaster
from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from ferry_control.models import ServerKind
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.ferryd_cluster import FerrydCluster, FerrydNode
from tests.helpers import (
    LOAD_FIELD,
    LOAD_TABLE,
    WAIT_S,
    LoadWriter,
    finished,
    register,
    serve,
    step,
    topology,
    writable_master,
)

#: The steps a failover drill takes, in order (without a switch back).
FAILOVER_DRILL_STEPS = [
    "preflight", "write_canaries", "canaries_replicated", "canary_writer_start", "choose_candidate",
    "candidate_checks", "pre_hooks", "fence_old_master_first", "candidate_applies_fenced_master", "bring_level",
    "promote_candidate", "fence_old_master", "lost_report", "repoint_replicas", "verify",
    "canary_writer_after_failover", "rpo", "preflight", "read_only", "replicate", "verify", "unfence",
    "verify_canaries", "verify_checksums", "verify_gtids", "verify_live_canaries",
]  # fmt: skip


async def run_drill(live: Any, cluster_id: int, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Starts a drill run now and waits for it: (the run, its operation) as the API shows them."""
    response = await live.client.post(f"/api/v1/clusters/{cluster_id}/drills/runs", json=body)
    assert response.status_code == 202, response.text
    operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
    run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()
    return run, operation


async def assert_every_increment_once(nodes: list[FerrydNode], summary: dict[str, Any]) -> None:
    """Every increment the load writer was told had committed is on every node exactly once (at most the unknown
    ones more)."""
    position = writable_master(nodes).status()["gtid_binlog_pos"]
    for node in nodes:
        node.wait_for(position)
        async with await FerryProtocolClient.connect(node.listen) as connection:
            for key, acked in summary["acked"].items():
                row = await connection.get(LOAD_TABLE, key)
                value = 0 if row is None else row[LOAD_FIELD]
                unknown = summary["unknown"].get(key, 0)
                assert acked <= value <= acked + unknown, (node.server_id, key, value, acked, unknown)


async def test_a_failover_drill_under_load_loses_nothing_and_the_old_master_rejoins(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    old, new = ferryd.master, ferryd.replica1
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        writer = await LoadWriter.start(ferryd.nodes, clients=4, domains=2, rate=200.0)
        try:
            run, operation = await run_drill(
                live,
                cluster_id,
                {"kind": "failover", "candidate_strategy": "fixed", "candidate_registered_server_id": ids["replica1"]},
            )
        finally:
            summary = await writer.stop()
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}")).json()
        listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs")).json()

    assert (run["state"], run["passed"], run["reasons"], run["kind"]) == ("passed", True, [], "failover")
    assert [s["name"] for s in operation["steps"]] == FAILOVER_DRILL_STEPS
    # The master was fenced alive, the candidate applied all it had, then took over.
    assert "made read-only before the promotion" in step(operation, "fence_old_master_first")["detail"]
    assert "replica1 (server_id 2) applied it" in step(operation, "candidate_applies_fenced_master")["detail"]
    result = operation["result"]
    assert (result["old_master_registered_server_id"], result["new_master_registered_server_id"]) == (
        ids["master"],
        ids["replica1"],
    )
    # RTO: the failover's (fence → writable) and the writer's; RPO: every canary the old master acknowledged is on
    # the new master.
    figures = run["failover"]
    assert 0 < run["rto_s"] == figures["rto_s"] < WAIT_S
    assert 0 < figures["writer_rto_s"] < WAIT_S
    assert run["rpo_lost"] == figures["rpo_lost"] == 0 and figures["lost_canaries"] == []
    assert figures["rpo_checked"] > 0 and figures["only_on_old_master"] == [] and figures["rejoined"] is True
    assert step(operation, "rpo")["detail"]["missing_on_new_master"] == 0
    assert [(r["id"], r["kind"], r["rto_s"], r["rpo_lost"]) for r in listed] == [
        (run["id"], "failover", run["rto_s"], 0)
    ]
    report = run["canary_writer"]
    assert (report["lost"], report["duplicated"], report["verified"]) == (0, 0, True), report
    assert [
        (w["switch"], w["old_master_registered_server_id"], w["new_master_registered_server_id"])
        for w in report["windows"]
    ] == [("failover", ids["master"], ids["replica1"])]
    assert report["window_s"] == figures["writer_rto_s"]
    # The old master rejoined through the rejoin's steps: a read-only replica of the new master, no longer fenced.
    rejoin = result["rejoin"]
    assert (rejoin["registered_server_id"], rejoin["master_registered_server_id"], rejoin["only_here"]) == (
        ids["master"],
        ids["replica1"],
        [],
    )
    assert server["fenced"] is False
    assert writable_master(ferryd.nodes) is new
    shape = topology(ferryd.nodes)
    assert shape[old.server_id] == (True, [("main", new.listen, True)])
    assert shape[ferryd.replica2.server_id] == (True, [("main", new.listen, True)])
    # The load writer followed the master; nothing it was told had committed is missing or applied twice.
    assert summary["master_changes"] >= 1, summary
    await assert_every_increment_once(ferryd.nodes, summary)


async def test_a_scheduled_failover_drill_switches_back_to_the_original_master(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/drills/schedules"
        created = await live.client.post(
            url, json={"name": "failover-weekly", "cron": "0 4 * * 0", "kind": "failover", "switch_back": True}
        )
        assert created.status_code == 201, created.text
        schedule = created.json()
        assert (schedule["kind"], schedule["candidate_strategy"]) == ("failover", "rotation")
        bad = await live.client.patch(f"{url}/{schedule['id']}", json={"kind": "crash"})
        assert bad.status_code == 422 and "'switchover' or 'failover'" in bad.json()["error"]["message"], bad.text
        cleared = await live.client.patch(f"{url}/{schedule['id']}", json={"kind": None})
        assert cleared.status_code == 409 and cleared.json()["error"]["code"] == "field_required", cleared.text
        writer = await LoadWriter.start(ferryd.nodes, clients=4, domains=2, rate=200.0)
        try:
            run, operation = await run_drill(live, cluster_id, {"schedule_id": schedule["id"]})
        finally:
            summary = await writer.stop()
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])

    assert (run["state"], run["kind"], run["schedule_id"], run["rpo_lost"]) == ("passed", "failover", schedule["id"], 0)
    # The rotation took the first eligible replica; the old master rejoined it, then took the role back.
    assert run["details"]["candidate_registered_server_id"] == ids["replica1"]
    assert run["failover"]["rejoined"] is True and run["details"]["switch_back"]["unavailable_s"] > 0
    names = [s["name"] for s in operation["steps"]]
    assert names.index("unfence") < names.index("switch_back_preflight") < names.index("verify_live_canaries")
    assert [w["switch"] for w in run["canary_writer"]["windows"]] == ["failover", "switch_back"]
    assert run["canary_writer"]["lost"] == 0
    assert writable_master(ferryd.nodes) is ferryd.master
    for replica in (ferryd.replica1, ferryd.replica2):
        assert topology([replica])[replica.server_id] == (True, [("main", ferryd.master.listen, True)])
    await assert_every_increment_once(ferryd.nodes, summary)


async def filter_domain(live: Any, node: FerrydNode, domain: int) -> None:
    """The node's connection `main` filters `domain` out (ignore_domain_ids)."""
    driver = live.app.state.drivers.for_address(ServerKind.ferry, node.admin)
    await driver.stop_replication("main")
    (before,) = await driver.replica_connections()
    assert before.settings is not None
    await driver.change_master(
        "main",
        ChangeMaster(
            before.master_address, settings=replace(before.settings, filters={"ignore_domain_ids": str(domain)})
        ),
    )
    await driver.start_replication("main")


async def test_a_failover_drill_is_refused_where_no_replica_keeps_every_domain(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        await filter_domain(live, ferryd.replica1, 2)
        rule = await live.client.patch(
            f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}", json={"promotion_rule": "must_not"}
        )
        assert rule.status_code == 200, rule.text
        before = topology(ferryd.nodes)
        plan = {"kind": "failover"}

        bad = await live.client.post(f"/api/v1/clusters/{cluster_id}/drills/runs", json={"kind": "crash"})
        assert bad.status_code == 422 and "'switchover' or 'failover'" in bad.json()["error"]["message"], bad.text

        response = await live.client.post(f"/api/v1/clusters/{cluster_id}/drills/dry-run", json=plan)
        assert response.status_code == 202, response.text
        dry = await finished(live.app, live.client, cluster_id, response.json()["id"])
        expected = (
            "failover drill refused, nothing was changed: no replica of master (server_id 1) can take over keeping "
            "every domain (1, 2) — replica1 (server_id 2): it would lose domain(s) 2: its connection filters "
            "them out; replica2 (server_id 3): its promotion rule is must_not"
        )
        assert (dry["type"], dry["dry_run"], dry["state"]) == ("drill", True, "failed"), dry
        assert dry["error"] == f"the failover drill would be refused: {expected}", dry["error"]
        assert dry["result"]["failure"] == REFUSED, dry["result"]
        fixed = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/drills/dry-run",
            json={**plan, "candidate_strategy": "fixed", "candidate_registered_server_id": ids["replica1"]},
        )
        fixed_dry = await finished(live.app, live.client, cluster_id, fixed.json()["id"])
        assert fixed_dry["error"] == (
            "the failover drill would be refused: failover drill refused, nothing was changed: replica1 (server_id 2) "
            "cannot replace master (server_id 1) keeping every domain (1, 2): it would lose domain(s) 2: its "
            "connection filters them out"
        ), fixed_dry["error"]
        listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs")).json()
        assert listed == [], "a dry run records no drill run"

        run, operation = await run_drill(live, cluster_id, plan)
        assert operation["state"] == "failed" and [s["name"] for s in operation["steps"]] == ["preflight"]
        assert (run["state"], run["kind"], run["reasons"], run["rto_s"], run["rpo_lost"]) == (
            "failed", "failover", [expected], None, None
        )  # fmt: skip
        assert topology(ferryd.nodes) == before, "nothing was changed"

        # With a replica that keeps every domain, the dry run passes and names the candidate and the others' reasons.
        await live.client.patch(
            f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}", json={"promotion_rule": "neutral"}
        )
        response = await live.client.post(f"/api/v1/clusters/{cluster_id}/drills/dry-run", json=plan)
        passing = await finished(live.app, live.client, cluster_id, response.json()["id"])
        assert passing["state"] == "succeeded", passing["error"]
        preflight = step(passing, "preflight")["detail"]
        assert preflight["candidate"] == "replica2 (server_id 3)" and preflight["domains"] == [1, 2]
        assert preflight["not_candidates"] == {
            "replica1 (server_id 2)": "it would lose domain(s) 2: its connection filters them out"
        }
        assert all(c["passed"] for c in passing["result"]["checks"]), passing["result"]["checks"]
        assert topology(ferryd.nodes) == before


async def test_ferryctl_runs_a_failover_drill_and_shows_its_rto_and_rpo(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        await register(live.client, ferryd, name="orders")
        async with serve(live.app) as url:
            token = live.tokens.operator
            run = await ferryctl(tmp_path, "drills", "run", "orders", "--kind", "failover", "--to", "replica2",
                                 "--wait", url=url, token=token)  # fmt: skip
            assert run.code == ExitCode.ok, (run.out, run.err)
            assert "failover drill run 1: passed" in run.out, run.out
            assert "rpo_lost: 0" in run.out and "rejoined: yes" in run.out, run.out
            bad = await ferryctl(tmp_path, "drills", "run", "orders", "--kind", "crash", url=url, token=token)
            assert bad.code == 2 and "'crash' is not one of 'switchover', 'failover'" in bad.err, bad.err
            history = await ferryctl(tmp_path, "drills", "history", "orders", "-o", "json", url=url, token=token)
            (listed,) = history.json()
            assert (listed["kind"], listed["state"], listed["rpo_lost"]) == ("failover", "passed", 0), listed
            assert listed["rto_s"] > 0 and listed["failover"]["writer_rto_s"] > 0, listed
            narrow = await ferryctl(tmp_path, "drills", "history", "orders", url=url, token=token, columns=80)
            assert narrow.code == ExitCode.ok and all(len(line) <= 80 for line in narrow.out.splitlines()), narrow.out
    assert writable_master(ferryd.nodes) is ferryd.replica2
    assert topology([ferryd.master])[ferryd.master.server_id] == (True, [("main", ferryd.replica2.listen, True)])
