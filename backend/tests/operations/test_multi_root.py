"""A cluster of several masters (the two-master shape, real MariaDB 10.11: masters 1 and 2 writing domains 1 and 2,
server 3 a multi-source replica of both over `m1` and `m2`, servers 4 and 5 below it) is a shape Ferry operates, not a
fault: when master 1 is SIGKILLed, the failover monitor — watching every master — fails it over on its own: server 3
becomes writable for domain 1 (its writable domain, recorded for the replica guard) and keeps replicating domain 2
from master 2 over `m2`; servers 4 and 5 are untouched and receive server 3's new domain-1 writes; with semi-sync
between masters and server 3, no acknowledged domain-1 transaction is lost. A planned switchover moves master 1's
domains to server 3 the same way, and one whose instance died between the promotion and its record of server 3's
writable domains is completed by the reconcile with them recorded, so the replica guard leaves the new master
writable — a failover's too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import LiveFactory
from tests.helpers import finished, run_operation, step, whole_cycles
from tests.mariadb_cluster import WAIT_S, MariadbCluster, eventually
from tests.mariadb_load import register_mariadb, seed000_tables
from tests.operations.test_operation_faults import left_running

POLL_INTERVAL_S = 0.2
DETECTION_POLLS = 3


def ports(cluster: MariadbCluster, number: int) -> dict[str, tuple[str, str, str]]:
    """Server `number`'s connections: name → (master port, IO running, SQL running)."""
    return {
        c["Connection_name"]: (c["Master_Port"], c["Slave_IO_Running"], c["Slave_SQL_Running"])
        for c in cluster.replica_status(number)
    }


async def test_a_lost_master_of_two_is_failed_over_by_the_monitor_and_the_hub_keeps_the_other(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(5, shape="seed000", semi_sync=True, durable=True)
    for number in (1, 2):
        cluster.sql(number, f"CREATE TABLE app.t{number} (id INT PRIMARY KEY);")
    acknowledged = []
    for row in range(1, 21):  # each answered only once server 3 acknowledged it (semi-sync)
        cluster.sql(1, f"INSERT INTO app.t1 VALUES ({row});")
        acknowledged.append(row)
    cluster.sql(2, "INSERT INTO app.t2 VALUES (1);")
    cluster.wait_converged()
    async with live_app(
        collector_enabled=True, poll_interval_s=POLL_INTERVAL_S, poll_timeout_s=1.0,
        failover_detection_polls=DETECTION_POLLS, unreachable_after_failures=DETECTION_POLLS,
    ) as live:  # fmt: skip
        cluster_id, ids = await register_mariadb(live.client, cluster, auto_failover=True)

        async def overview() -> dict | None:
            listed = (await live.client.get("/api/v1/clusters/overview")).json()
            found = next((c for c in listed if c["id"] == cluster_id), None)
            return found if found and found["masters"] == ["s1", "s2"] else None

        summary = await eventually("both masters in the overview", overview)
        assert not any("masters" in problem for problem in summary["problems"]), summary["problems"]
        cluster.kill(1)

        async def failover_id() -> int | None:
            listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
            return next((o["id"] for o in listed if o["type"] == "failover"), None)

        operation_id = await eventually("an automatic failover of master 1", failover_id, WAIT_S * 2)
        operation = await finished(live.app, live.client, cluster_id, operation_id)
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        # Writable for domain 1 as the failover recorded: the replica guard, which makes a writable server that
        # replicates read-only, leaves it be over the collector's next cycles, and nothing alerts.
        await whole_cycles(live, 2)
        path = f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}/writable-domains"
        writable = (await live.client.get(path)).json()
        assert writable["writable_domains"] == [1] and writable["set_by"] == f"operation {operation_id}", writable
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        assert not [a for a in topology["alerts"] if a["kind"] == "writable_replica"], topology["alerts"]
        assert cluster.value(3, "@@read_only") == "0", "the new master stays writable"
    assert operation["params"]["source_registered_server_id"] == ids[1]
    assert operation["result"]["new_master_registered_server_id"] == ids[3]
    promoted = step(operation, "promote_candidate")["detail"]
    assert "keeps replicating from s2 (server_id 2) (connections 'm2')" in promoted, promoted
    assert "(writable domains recorded: 1)" in promoted, promoted

    assert ports(cluster, 3) == {"m2": (str(cluster.server(2).port), "Yes", "Yes")}, "m2 kept, m1 gone"
    for number in (4, 5):  # untouched
        assert ports(cluster, number) == {"": (str(cluster.server(3).port), "Yes", "Yes")}, number
    rows = cluster.sql(3, "SELECT id FROM app.t1 ORDER BY id")
    assert [int(r[0]) for r in rows] == acknowledged, "every acknowledged domain-1 transaction is on server 3"

    # Server 3 now writes domain 1; master 2 still writes domain 2 through it; both reach servers 4 and 5.
    cluster.sql(3, "SET SESSION gtid_domain_id = 1; INSERT INTO app.t1 VALUES (100);")
    cluster.sql(2, "INSERT INTO app.t2 VALUES (2);")
    for number in (4, 5):
        await eventually(f"server {number} with server 3's and master 2's new rows", lambda n=number: (
            cluster.sql(n, "SELECT COUNT(*) FROM app.t1 WHERE id = 100") == [["1"]]
            and cluster.sql(n, "SELECT COUNT(*) FROM app.t2") == [["2"]]))  # fmt: skip


async def test_a_planned_switchover_of_one_master_of_two_keeps_the_candidates_other_master(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """`--from s1 --to s3`: server 3 becomes writable for domain 1 and keeps `m2` from master 2; master 1 replicates
    from server 3 over `m1`, the name the cluster uses; servers 4 and 5 are untouched. Moving it back at once is
    refused, naming why (server 3 takes writes and replicates), and changes nothing."""
    cluster = mariadb_factory(5, shape="seed000")
    seed000_tables(cluster)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                        {"source_registered_server_id": ids[1],
                                         "candidate_registered_server_id": ids[3]})  # fmt: skip
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        kept = step(operation, "candidate_keeps_connections")["detail"]
        assert "keeps replicating over 'm2'" in kept and "(writable domains recorded: 1)" in kept, kept
        path = f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}/writable-domains"
        assert (await live.client.get(path)).json()["writable_domains"] == [1]
        assert cluster.value(3, "@@read_only") == "0" and cluster.value(1, "@@read_only") == "1"
        assert ports(cluster, 3) == {"m2": (str(cluster.server(2).port), "Yes", "Yes")}
        assert ports(cluster, 1) == {"m1": (str(cluster.server(3).port), "Yes", "Yes")}
        for number in (4, 5):
            assert ports(cluster, number) == {"": (str(cluster.server(3).port), "Yes", "Yes")}, number

        back = await run_operation(live.app, live.client, cluster_id, "switchover",
                                   {"source_registered_server_id": ids[3],
                                    "candidate_registered_server_id": ids[1]})  # fmt: skip
        assert back["state"] == "failed"
        assert "source_shape" in back["error"] and "takes writes and also replicates ('m2' from" in back["error"]
        assert cluster.value(3, "@@read_only") == "0", "the refusal changed nothing"
    cluster.sql(3, "SET SESSION gtid_domain_id = 1; INSERT INTO app.t1 VALUES (1);")
    cluster.sql(2, "INSERT INTO app.t2 VALUES (1);")
    for number in (1, 4, 5):
        await eventually(f"server {number} with the new rows", lambda n=number: (
            cluster.sql(n, "SELECT COUNT(*) FROM app.t1") == [["1"]]
            and cluster.sql(n, "SELECT COUNT(*) FROM app.t2") == [["1"]]))  # fmt: skip


async def test_a_candidate_that_filters_out_a_domain_of_its_master_is_refused_naming_the_domain(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """Server 3's `m1` ignores domain 5, which master 1 also writes: promoted in master 1's place, server 3 (and
    everything below it) would lose domain 5. The switchover and the failover are refused naming the domain, and
    nothing changes."""
    cluster = mariadb_factory(5, shape="seed000")
    cluster.sql(3, "STOP SLAVE 'm1'; CHANGE MASTER 'm1' TO IGNORE_DOMAIN_IDS = (5); START SLAVE 'm1';")
    cluster.sql(1, "CREATE TABLE app.t1 (id INT PRIMARY KEY); SET SESSION gtid_domain_id = 5; "
                   "INSERT INTO app.t1 VALUES (5);")  # fmt: skip
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        switchover = await run_operation(live.app, live.client, cluster_id, "switchover",
                                         {"source_registered_server_id": ids[1],
                                          "candidate_registered_server_id": ids[3]})  # fmt: skip
        assert switchover["state"] == "failed"
        assert "filtering out domain(s) 5 of s1 (server_id 1)" in switchover["error"], switchover["error"]
        await live.app.state.collector.run_cycle()  # master 1's domains, as last seen before it is lost
        cluster.kill(1)
        failover = await run_operation(
            live.app, live.client, cluster_id, "failover", {"source_registered_server_id": ids[1]}
        )
        assert failover["state"] == "failed"
        assert "s3 (server_id 3): it would lose domain(s) 5" in failover["error"], failover["error"]
    assert cluster.value(3, "@@read_only") == "1"
    assert set(ports(cluster, 3)) == {"m1", "m2"}, "nothing changed"


async def completed_with_domain_1_recorded(live: Any, cluster_id: int, operation_id: int, server3: int) -> None:
    """Reconciles the operation a dead instance left; it must end completed, with domain 1 recorded as server 3's
    writable domain, set by that operation."""
    assert await live.app.state.reconciler.run_once() == [operation_id]
    operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
    report = operation["result"]["reconciled"]
    assert report["problems"] == [], report
    assert operation["result"]["failure"]["compensation"] == "rolled_forward", operation["result"]["failure"]
    assert any("s3 (server_id 3): writable domains recorded: 1" in d for d in report["done"]), report
    recorded = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{server3}/writable-domains")).json()
    assert (recorded["writable_domains"], recorded["set_by"]) == ([1], f"operation {operation_id}"), recorded


async def test_a_switchover_of_one_master_of_two_left_after_the_promotion_is_completed_with_its_writable_domains(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """The dead instance had made server 3 writable and cut its `m1` from master 1 (read-only), and died before it
    recorded server 3's writable domains: the reconcile completes the move — master 1 replicates from server 3 over
    `m1`, server 3 keeps `m2` — and records domain 1 as server 3's, set by the operation; the replica guard's next
    pass then leaves server 3 writable, and its own domain-1 writes are not errant."""
    cluster = mariadb_factory(5, shape="seed000")
    seed000_tables(cluster)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await live.app.state.collector.run_cycle(as_leader=True)
        cluster.sql(1, "SET GLOBAL read_only = 1;")
        cluster.sql(3, "STOP SLAVE 'm1'; RESET SLAVE 'm1' ALL; SET GLOBAL read_only = 0;")
        switch = {
            "old_master_registered_server_id": ids[1], "new_master_registered_server_id": ids[3], "connection": "m1",
            "old_master_was_read_only": False, "candidate_was_read_only": True, "others": [],
            "candidate_keeps": ["m2"],
        }  # fmt: skip
        promoted = {"name": "candidate_leaves_old_master", "state": "passed", "started_at": "2026-11-30T03:00:00Z",
                    "finished_at": "2026-11-30T03:00:01Z", "duration_s": 1.0, "detail": None}  # fmt: skip
        operation_id = await left_running(live, cluster_id, "switchover", {}, {"switch": switch}, [promoted])
        await completed_with_domain_1_recorded(live, cluster_id, operation_id, ids[3])

        cluster.sql(3, "SET SESSION gtid_domain_id = 1; INSERT INTO app.t1 VALUES (1);")
        await live.app.state.collector.run_cycle(as_leader=True)  # the replica guard runs after it
        assert cluster.value(3, "@@read_only") == "0", "the guard left the new master of domain 1 writable"
        servers = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["nodes"]
        [node3] = [n for n in servers if n["registered_server_id"] == ids[3]]
        assert (node3["writable_domains"], node3["errant"]) == ([1], []), node3
    assert ports(cluster, 3) == {"m2": (str(cluster.server(2).port), "Yes", "Yes")}
    assert ports(cluster, 1) == {"m1": (str(cluster.server(3).port), "Yes", "Yes")}


async def test_a_failover_of_one_master_of_two_left_after_the_promotion_is_completed_with_its_writable_domains(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """Master 1 lost; the dead instance had cut server 3's `m1` and made it writable, and died before it recorded
    server 3's writable domains: the reconcile completes the failover with domain 1 (master 1's, as last seen)
    recorded as server 3's, set by the operation, and the replica guard leaves server 3 writable."""
    cluster = mariadb_factory(5, shape="seed000")
    seed000_tables(cluster)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await live.app.state.collector.run_cycle(as_leader=True)  # master 1's domains, as last seen before it is lost
        cluster.kill(1)
        cluster.sql(3, "STOP SLAVE 'm1'; RESET SLAVE 'm1' ALL; SET GLOBAL read_only = 0;")
        promoted = {"name": "promote_candidate", "state": "passed", "started_at": "2026-11-30T03:00:00Z",
                    "finished_at": "2026-11-30T03:00:01Z", "duration_s": 1.0, "detail": None}  # fmt: skip
        operation_id = await left_running(
            live, cluster_id, "failover", {"automatic": True},
            {"old_master_registered_server_id": ids[1], "new_master_registered_server_id": ids[3]}, [promoted],
        )  # fmt: skip
        await completed_with_domain_1_recorded(live, cluster_id, operation_id, ids[3])

        await live.app.state.collector.run_cycle(as_leader=True)  # the replica guard runs after it
        assert cluster.value(3, "@@read_only") == "0", "the guard left the new master of domain 1 writable"
    assert ports(cluster, 3) == {"m2": (str(cluster.server(2).port), "Yes", "Yes")}
