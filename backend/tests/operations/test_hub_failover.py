"""A lost intermediate master (orchestrator's DeadIntermediateMaster). On real MariaDB 10.11, the two-master shape: the
hub (server 3) is SIGKILLed under load in both domains while server 4 is ahead in domain 1 and server 5 in domain
2; the failover monitor confirms the loss (the replicas lost it, its masters no longer send to it) and re-homes
both: the new hub takes `m1` and `m2` to the masters from its own positions, gets what it lacks from them, and the
other replica follows it once the new hub is at or ahead of it in every domain; the report names where each domain
came from; nothing acknowledged is lost; the lost hub is fenced; each replica's replication gap is reported. On
ferryd, a chain A → B → C: B killed, C re-homed under A."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ferry_control.services.orchestrator import hub_failover
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import finished, register, run_operation, step
from tests.mariadb_cluster import WAIT_S, MariadbCluster, eventually
from tests.mariadb_load import MariadbLoadWriter, load_rows, register_mariadb, seed000_tables
from tests.operations.test_hub_switchover import connections

POLL_INTERVAL_S = 0.2
DETECTION_POLLS = 3


def by_domain(text: str) -> dict[str, str]:
    return {g.split("-")[0]: g for g in text.split(",") if g}


def until_position(start: str, newest: str, domain: str) -> str:
    """`start` with `domain` moved to `newest`'s GTID in it."""
    position = by_domain(start) | {domain: by_domain(newest)[domain]}
    return ",".join(position[d] for d in sorted(position))


async def test_a_lost_hub_is_re_homed_by_the_monitor_each_replica_ahead_in_one_domain(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(5, shape="seed000")
    start = seed000_tables(cluster)
    for number in (4, 5):
        cluster.sql(number, "STOP SLAVE;")
    # Server 4 gets domain 1's newest, server 5 domain 2's: neither is ahead in every domain.
    cluster.sql(1, "INSERT INTO app.t1 VALUES (1), (2); INSERT INTO app.t1 VALUES (3);")
    cluster.sql(2, "INSERT INTO app.t2 VALUES (1); INSERT INTO app.t2 VALUES (2);")
    newest = cluster.value(1, "@@gtid_binlog_pos") + "," + cluster.value(2, "@@gtid_binlog_pos")
    await eventually("the hub with both domains' newest", lambda: by_domain(cluster.value(3, "@@gtid_current_pos"))
                     == by_domain(start) | by_domain(newest))  # fmt: skip
    for number, domain in ((4, "1"), (5, "2")):
        cluster.sql(number, f"START SLAVE UNTIL master_gtid_pos = '{until_position(start, newest, domain)}';")
        await eventually(f"server {number} at domain {domain}'s newest", lambda n=number, d=domain: by_domain(
            cluster.value(n, "@@gtid_current_pos")).get(d) == by_domain(newest)[d])  # fmt: skip
    assert by_domain(cluster.value(4, "@@gtid_current_pos"))["2"] != by_domain(newest)["2"]
    assert by_domain(cluster.value(5, "@@gtid_current_pos"))["1"] != by_domain(newest)["1"]
    async with live_app(
        collector_enabled=True, poll_interval_s=POLL_INTERVAL_S, poll_timeout_s=1.0,
        failover_detection_polls=DETECTION_POLLS, unreachable_after_failures=DETECTION_POLLS,
    ) as live:  # fmt: skip
        cluster_id, ids = await register_mariadb(live.client, cluster, auto_failover=True)

        async def observed() -> bool:
            servers = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()
            return all(s["health"] == "healthy" for s in servers)

        await eventually("every server observed", observed)
        writer = await MariadbLoadWriter(cluster, clients=2, domains=2, rate=100.0, masters={1: 1, 2: 2}).start()
        try:
            cluster.kill(3)
            for number in (4, 5):  # their connections run again, and find the hub gone
                cluster.sql(number, "START SLAVE;")

            async def failover_id() -> int | None:
                listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
                return next((o["id"] for o in listed if o["type"] == "failover"), None)

            operation_id = await eventually("an automatic failover of the hub", failover_id, WAIT_S * 2)
            operation = await finished(live.app, live.client, cluster_id, operation_id)
            assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
            hub = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}")).json()
        finally:
            ledger = await writer.stop()
    assert operation["params"]["source_registered_server_id"] == ids[3]
    assert "no longer send to it" in step(operation, "confirm_masters_lost_it")["detail"]
    new = next(n for n, i in ids.items() if i == operation["result"]["new_master_registered_server_id"])
    other = 9 - new
    assert new in (4, 5)
    assert connections(cluster, new) == {"m1": (1, "Yes", "Yes"), "m2": (2, "Yes", "Yes")}
    assert connections(cluster, other) == {"": (new, "Yes", "Yes")}
    report = {d["domain"]: d for d in operation["result"]["domains"]}
    assert report[1]["from"] == "s1 (server_id 1) over 'm1'" and report[2]["from"] == "s2 (server_id 2) over 'm2'"
    gaps = operation["result"]["replication_gaps_s"]
    assert set(gaps) == {f"s{n} (server_id {n})" for n in (4, 5)} and all(g is not None for g in gaps.values())
    assert hub["fenced"] is True
    assert sum(ledger.acked.values()) > 0 and ledger.refused == 0
    for number in (4, 5):
        await eventually(f"server {number} with every acknowledged row", lambda n=number: all(
            load_rows(cluster, n).get(key, -1) == acked for key, acked in ledger.acked.items()))  # fmt: skip
    assert [int(r[0]) for r in cluster.sql(other, "SELECT id FROM app.t1 ORDER BY id")] == [1, 2, 3]
    assert [int(r[0]) for r in cluster.sql(other, "SELECT id FROM app.t2 ORDER BY id")] == [1, 2]


async def test_a_chain_whose_middle_is_lost_re_homes_its_end_under_the_head(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """ferryd: master → replica1 → replica2; replica1 SIGKILLed; a failover naming it moves replica2's `main`
    to the master, from its own position."""
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd, name="chain")
        moved = await run_operation(live.app, live.client, cluster_id, "repoint",
                                    {"registered_server_id": ids["replica2"],
                                     "master_registered_server_id": ids["replica1"]})  # fmt: skip
        assert moved["state"] == "succeeded", (moved["error"], moved["steps"])
        await live.app.state.collector.run_cycle()  # the chain's links, stored
        ferryd.replica1.kill()
        operation = await run_operation(live.app, live.client, cluster_id, "failover",
                                        {"source_registered_server_id": ids["replica1"]})  # fmt: skip
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    assert operation["result"]["new_master_registered_server_id"] == ids["replica2"]
    replication = ferryd.replica2.get("/v1/replication")["connections"]
    assert [(c["name"], c["master"], c["running"]) for c in replication] == [("main", ferryd.master.listen, True)]
    written = ferryd.master.increment("chain", "k", domain=1)
    ferryd.replica2.wait_for(written)


async def test_a_hub_failover_stopped_after_its_moves_began_is_completed_by_its_own_roll_forward(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain above, the failover stopped by an unexpected error once the new hub took the lost hub's connections
    (before it fenced the lost hub): its guard rolls forward with the move's one completion (the reconcile's too,
    `hub_failover.complete_hub_failover`), which fences the lost hub; before, nothing compensated a hub failover."""
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    failed = []

    def failing_gap(lost_at: Any) -> float | None:
        if not failed:
            failed.append(lost_at)
            raise RuntimeError("injected once the new hub took the connections")
        return None

    monkeypatch.setattr(hub_failover, "_gap", failing_gap)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd, name="chain")
        moved = await run_operation(
            live.app, live.client, cluster_id, "repoint",
            {"registered_server_id": ids["replica2"], "master_registered_server_id": ids["replica1"]},
        )  # fmt: skip
        assert moved["state"] == "succeeded", (moved["error"], moved["steps"])
        await live.app.state.collector.run_cycle()  # the chain's links, stored
        ferryd.replica1.kill()
        operation = await run_operation(live.app, live.client, cluster_id, "failover",
                                        {"source_registered_server_id": ids["replica1"]})  # fmt: skip
        hub = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica1']}")).json()
    assert failed, "the injected error did not happen"
    assert step(operation, "new_hub_takes_connections")["state"] == "failed"
    assert step(operation, "roll_forward")["state"] == "passed", operation["steps"]
    assert operation["result"]["failure"]["compensation"] == "rolled_forward", operation["result"]["failure"]
    assert "fence_old_master" not in [s["name"] for s in operation["steps"]]
    assert hub["fenced"] is True, hub
    replication = ferryd.replica2.get("/v1/replication")["connections"]
    assert [(c["name"], c["master"], c["running"]) for c in replication] == [("main", ferryd.master.listen, True)]
    written = ferryd.master.increment("chain", "k", domain=1)
    ferryd.replica2.wait_for(written)
