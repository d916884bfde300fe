"""The drill's live canary writer: against a cluster under `ferry-bench` load, a drill that switches over and back
writes canaries before, during and after each switch to whichever node is the writable master, reports the
write-unavailability window it saw beside the switchover's own, and finds every acknowledged canary on every node;
a canary acknowledged and then deleted on one replica fails the drill, which names it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferry_control.drivers.ferry_protocol import Delete, FerryProtocolClient
from ferry_control.services.orchestrator.gtid import position
from tests.conftest import LOOPBACK_WEBHOOKS, LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import LOAD_FIELD, LOAD_TABLE, WAIT_S, LoadWriter, WebhookReceiver, finished, register, serve, step

CANARY_TABLE = "ferry_drill_canary"


async def test_a_drill_under_load_reports_its_window_and_finds_every_acknowledged_canary(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    nodes = ferryd.nodes
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        writer = await LoadWriter.start(nodes, clients=4, domains=2, rate=200.0)
        try:
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
        finally:
            load = await writer.stop()
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()

    assert (run["state"], run["passed"], run["reasons"]) == ("passed", True, [])
    report = run["canary_writer"]
    assert report is not None and report["verified"] is True
    assert report["domains"] == [0, 1, 2]
    phases = report["phases"]
    # The writer ran on both sides of each switch; what it sent during one (as short as a few round trips, so any
    # number of writes from none up) was answered or refused, never left unknown.
    for phase in ("before", "after"):
        assert phases[phase]["acknowledged"] > 0, (phase, phases)
    assert phases["during"]["unknown"] == 0, phases
    assert report["acknowledged"] == sum(p["acknowledged"] for p in phases.values())
    assert (report["lost"], report["duplicated"], report["lost_canaries"], report["behind"]) == (0, 0, [], [])
    # The window the writer saw, for each switch, beside the switchover's own.
    switch, back = report["windows"]
    assert (switch["switch"], switch["old_master_registered_server_id"], switch["new_master_registered_server_id"]) == (
        "switch", ids["master"], ids["replica1"]
    )  # fmt: skip
    assert (back["switch"], back["new_master_registered_server_id"]) == ("switch_back", ids["master"])
    assert report["window_s"] == switch["window_s"] and 0 < switch["window_s"] < WAIT_S
    assert 0 < back["window_s"] < WAIT_S
    assert 0 < run["rto_s"] < WAIT_S
    # Under load the servers never stand at one position: the checksums say so rather than fail the drill.
    checksums = step(operation, "verify_checksums")["detail"]
    assert checksums["problem"] is None, checksums
    verified = step(operation, "verify_live_canaries")["detail"]
    assert verified["acknowledged"] == report["acknowledged"]
    ledger = verified["ledger"]["acknowledged"]  # [key, gtid, server_id, phase, at_s] each
    assert len(ledger) == report["acknowledged"] and verified["ledger"]["truncated"] is False
    assert {phase for *_, phase, _ in ledger} == {"before", "during", "after"}
    assert {server_id for _, _, server_id, *_ in ledger} == {ids["master"], ids["replica1"]}

    # What the drill says, the nodes confirm: with the load stopped, every node holds the same canary rows (as
    # many as were written at least), and the load writer's acknowledged increments too.
    target = ferryd.master.status()["gtid_binlog_pos"]
    for node in nodes:
        node.wait_for(target)
    tables = [node.get("/v1/checksums")["tables"] for node in nodes]
    assert all(t[CANARY_TABLE] == tables[0][CANARY_TABLE] for t in tables), tables
    assert tables[0][CANARY_TABLE]["rows"] >= report["acknowledged"] + 3  # and the three written before
    for node in nodes:
        current = position(node.status()["gtid_current_pos"])
        async with await FerryProtocolClient.connect(node.listen) as connection:
            for key, gtid, *_ in ledger:
                row = await connection.get(CANARY_TABLE, key)
                assert row is not None and row["run"] == run["id"], (node.server_id, key, row)
                domain, _, seq = (int(x) for x in gtid.split("-"))
                assert current.get(domain).seq >= seq, (node.server_id, gtid)
            for key, acked in load["acked"].items():
                row = await connection.get(LOAD_TABLE, key)
                assert row is not None and row[LOAD_FIELD] >= acked, (node.server_id, key, row, acked)
    print(f"drill under load: writer windows {[w['window_s'] for w in report['windows']]} s (switchover "
          f"{run['rto_s']} s), phases {phases}")  # fmt: skip


async def test_a_canary_lost_on_one_replica_fails_the_drill_naming_it(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    deleted: list[str] = []

    async def lose_a_canary(payload: dict[str, Any]) -> int:
        """The pre-operation hook (the writer has been writing): the first canary of domain 1, acknowledged by the
        master, is deleted on replica2 once replica2 has it — in a domain of its own, so replication goes on."""
        key = f"run{payload['params']['drill_run_id']}_d1_w0"
        async with await FerryProtocolClient.connect(ferryd.master.listen) as master:
            assert await master.get(CANARY_TABLE, key) is not None, f"{key} not on the master"
        async with await FerryProtocolClient.connect(ferryd.replica2.listen, timeout_s=WAIT_S) as replica:
            await replica.wait_position(ferryd.master.status()["gtid_binlog_pos"], WAIT_S)
            assert await replica.get(CANARY_TABLE, key) is not None, f"{key} not on replica2"
            await replica.transact([Delete(CANARY_TABLE, key)], domain=99)
        deleted.append(key)
        return 200

    receiver = WebhookReceiver(lose_a_canary)
    async with serve(receiver) as hook_url:
        # Replica2's delete is in a domain only it has, so the servers never stand at one position for the
        # checksums: their waits are kept short.
        async with live_app(
            pre_operation_webhooks=[hook_url], webhook_allowed_hosts=LOOPBACK_WEBHOOKS, drill_checksum_wait_s=0.5
        ) as live:
            cluster_id, ids = await register(live.client, ferryd)
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/runs",
                json={"candidate_strategy": "fixed", "candidate_registered_server_id": ids["replica1"]},
            )
            assert response.status_code == 202, response.text
            operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
            run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()

    assert deleted == [f"run{run['id']}_d1_w0"], receiver.calls
    assert operation["state"] == "failed" and operation["error"].startswith("drill failed: ")
    assert (run["state"], run["passed"]) == ("failed", False)
    lost = [r for r in run["reasons"] if "acknowledged canary write(s) lost" in r]
    assert len(lost) == 1, run["reasons"]
    assert lost[0].startswith("1 acknowledged canary write(s) lost: ")
    assert f"replica2 (server_id 3): {deleted[0]} (1-1-" in lost[0], lost[0]
    assert "acknowledged before the switch) is None" in lost[0]
    report = run["canary_writer"]
    assert (report["lost"], report["duplicated"], report["verified"]) == (1, 0, True)
    assert report["lost_canaries"] == [lost[0].removeprefix("1 acknowledged canary write(s) lost: ")]
    # Only that one: every other acknowledged canary is on every server.
    assert report["acknowledged"] > 1 and all(report["phases"][p]["acknowledged"] > 0 for p in ("before", "after"))
