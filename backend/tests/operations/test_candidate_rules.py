"""Candidate rules on real MariaDB 10.11 servers, through the API: a replica delayed by an hour never holds a failover
back (the drain waits only for candidates) and ends replicating from the new master with its delay and its position
kept, nothing skipped; a `must_not` replica is never promoted even when it is the most advanced (the candidate is
leveled from it instead), and naming it is refused with the reason, nothing changed; a `prefer_not` replica that
alone is ahead is promoted, then the role moves on to the `prefer` one by a switchover that follows; a label
constraint keeps the candidate within the old master's `dc`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.conftest import LiveFactory
from tests.helpers import finished, run_operation, step
from tests.mariadb_cluster import MariadbCluster, eventually
from tests.mariadb_load import register_mariadb

DELAY_S = 3600


async def set_rule(client: httpx.AsyncClient, cluster_id: int, server_id: int, **fields: Any) -> None:
    response = await client.patch(f"/api/v1/clusters/{cluster_id}/servers/{server_id}", json=fields)
    assert response.status_code == 200, response.text


def number_of(ids: dict[int, int], server_id: int) -> int:
    return next(n for n, i in ids.items() if i == server_id)


def write(cluster: MariadbCluster, *values: int) -> str:
    """Rows into app.t on server 1; returns its gtid_binlog_pos after them."""
    cluster.sql(1, "".join(f"INSERT INTO app.t VALUES ({v});" for v in values))
    return cluster.value(1, "@@gtid_binlog_pos")


async def test_a_replica_delayed_by_an_hour_never_holds_a_failover_back(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(4)
    cluster.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY);")
    cluster.wait_converged()
    cluster.sql(4, f"STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = {DELAY_S}; START SLAVE;")
    everything = write(cluster, 1, 2, 3)
    for n in (2, 3):
        await eventually(f"server {n} applying everything",
                         lambda n=n: cluster.value(n, "@@gtid_current_pos") == everything)  # fmt: skip
    await eventually("the delayed server 4 receiving everything (and applying none of it)",
                     lambda: cluster.replica_status(4)[0]["Gtid_IO_Pos"] == everything)  # fmt: skip
    held = cluster.value(4, "@@gtid_slave_pos")
    assert held != everything
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        cluster.kill(1)
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    drain = step(operation, "drain_relay_logs")["detail"]
    assert "server" in str(drain["drained"]) and "s4" not in str(drain["drained"]), drain
    assert f"a delay of {DELAY_S} s (never promoted automatically)" in drain["not_waited_for"]["s4 (server_id 4)"]
    new = number_of(ids, operation["result"]["new_master_registered_server_id"])
    assert new in (2, 3)

    # Server 4 replicates from the new master, its delay kept, nothing it had not applied passed over.
    connection = cluster.replica_status(4)[0]
    assert (connection["Master_Port"], connection["SQL_Delay"], connection["Slave_IO_Running"],
            connection["Slave_SQL_Running"]) == (str(cluster.server(new).port), str(DELAY_S), "Yes", "Yes")  # fmt: skip
    assert cluster.value(4, "@@gtid_slave_pos") == held, "the delayed replica applied nothing early"
    cluster.sql(4, "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE;")
    await eventually("server 4, its delay lifted, applying everything from the new master",
                     lambda: cluster.value(4, "@@gtid_current_pos") == everything)  # fmt: skip
    assert cluster.sql(4, "SELECT id FROM app.t ORDER BY id") == [["1"], ["2"], ["3"]]


async def server_2_ahead(cluster: MariadbCluster, *values: int) -> str:
    """Server 3 stops replicating, master 1 writes rows `values` into app.t, server 2 applies them: server 2 is the
    most advanced replica. Returns master 1's position."""
    cluster.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY);")
    cluster.wait_converged()
    cluster.sql(3, "STOP SLAVE;")
    everything = write(cluster, *values)
    await eventually("server 2 ahead", lambda: cluster.value(2, "@@gtid_current_pos") == everything)
    return everything


async def test_a_must_not_replica_is_never_promoted_even_the_most_advanced(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    everything = await server_2_ahead(cluster, 1, 2)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await set_rule(live.client, cluster_id, ids[2], promotion_rule="must_not")
        cluster.kill(1)
        named = await run_operation(
            live.app, live.client, cluster_id, "failover", {"candidate_registered_server_id": ids[2]}
        )
        assert named["state"] == "failed"
        assert "s2 (server_id 2) cannot replace" in named["error"] and "must_not" in named["error"], named
        assert cluster.value(2, "@@read_only") == "1" and cluster.value(3, "@@read_only") == "1", "nothing changed"
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    assert operation["result"]["new_master_registered_server_id"] == ids[3]
    chose = step(operation, "choose_candidate")["detail"]
    assert "its promotion rule is must_not" in chose["not_candidates"]["s2 (server_id 2)"], chose
    assert step(operation, "bring_level")["state"] == "passed", "server 3 got the newest from server 2 first"
    assert cluster.value(3, "@@read_only") == "0" and cluster.value(3, "@@gtid_current_pos") == everything
    assert [c["Master_Port"] for c in cluster.replica_status(2)] == [str(cluster.server(3).port)]


async def test_a_prefer_not_replica_alone_ahead_is_promoted_then_the_role_moves_to_the_preferred(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    everything = await server_2_ahead(cluster, 1, 2)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await set_rule(live.client, cluster_id, ids[2], promotion_rule="prefer_not")
        await set_rule(live.client, cluster_id, ids[3], promotion_rule="prefer")
        cluster.kill(1)
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert operation["result"]["new_master_registered_server_id"] == ids[2], "the only one ahead is promoted first"
        assert operation["result"]["role_moves_to_registered_server_id"] == ids[3]
        assert "prefer_not, so the role then moves on to" in step(operation, "choose_candidate")["detail"]["why"]

        async def follow_up_id() -> int | None:
            body = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation['id']}")).json()
            return body["result"].get("follow_up_operation_id")

        follow_up = await finished(live.app, live.client, cluster_id, await eventually("the follow-up", follow_up_id))
    assert (follow_up["type"], follow_up["state"]) == ("switchover", "succeeded"), (follow_up["error"], follow_up)
    assert follow_up["result"]["new_master_registered_server_id"] == ids[3]
    assert cluster.value(3, "@@read_only") == "0" and cluster.value(2, "@@read_only") == "1"
    await eventually("server 2 replicating from server 3", lambda: [c["Master_Port"] for c in cluster.replica_status(2)]
                     == [str(cluster.server(3).port)])  # fmt: skip
    assert cluster.value(3, "@@gtid_current_pos") == everything


async def test_a_label_constraint_keeps_the_new_master_in_the_old_ones_dc(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """Server 2 (another dc) is the most advanced; the cluster requires `dc` kept: server 3 is promoted, leveled
    from server 2. A dry run shows the plan: which server is out, and why."""
    cluster = mariadb_factory(3)
    everything = await server_2_ahead(cluster, 1)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster, candidate_labels=["dc"])
        for number, dc in ((1, "a"), (2, "b"), (3, "a")):
            await set_rule(live.client, cluster_id, ids[number], labels={"dc": dc})
        cluster.kill(1)
        dry = await run_operation(live.app, live.client, cluster_id, "failover", {"dry_run": True})
        assert dry["state"] == "succeeded", (dry["error"], dry["steps"])
        excluded = step(dry, "choose_candidate")["detail"]["not_candidates"]
        assert excluded == {"s2 (server_id 2)": "its label dc=b differs from the source's dc=a"}, excluded
        assert cluster.value(3, "@@read_only") == "1", "a dry run changes nothing"
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    assert operation["result"]["new_master_registered_server_id"] == ids[3]
    assert cluster.value(3, "@@gtid_current_pos") == everything


async def test_an_adopted_cluster_keeps_its_default_connection_through_switchovers(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """A cluster wired by hand on MariaDB's default connection (`''`), adopted through the API and switched over
    twice: every replica, the demoted masters too, replicates on the default connection, so `SHOW SLAVE STATUS`
    (no name) shows it and an operator's plain `CHANGE MASTER TO` works as before."""
    cluster = mariadb_factory(3)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        for master in (2, 1):
            operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                            {"candidate_registered_server_id": ids[master]})  # fmt: skip
            assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
            for number in (n for n in (1, 2, 3) if n != master):
                rows = cluster.sql(number, "SHOW SLAVE STATUS", names=True)
                assert len(rows) == 2, f"server {number}: SHOW SLAVE STATUS shows no replication: {rows}"
                status = dict(zip(rows[0], rows[1], strict=True))
                assert status["Master_Port"] == str(cluster.server(master).port), (number, status)
                assert [c["Connection_name"] for c in cluster.replica_status(number)] == [""], number
