"""Repoint in any shape, on the two-master shape's servers (masters 1 and 2, hub 3 over `m1` and `m2`, 4 and 5 below
it): moving server 4 under server 5 while server 5 is behind it in domain 1 levels server 5 from server 4 first,
then moves server 4, nothing lost; the same with server 5 writable is refused naming the domain and the GTIDs; a
move that would leave server 4 without domain 2, or make a loop directly or through another server, is refused and
changes nothing."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import LiveFactory
from tests.helpers import run_operation, step
from tests.mariadb_cluster import MariadbCluster, eventually
from tests.mariadb_load import register_mariadb
from tests.operations.test_hub_switchover import connections


async def repoint(live, cluster_id: int, server: int, master: int, **fields: object) -> dict:  # type: ignore[no-untyped-def]
    return await run_operation(live.app, live.client, cluster_id, "repoint",
                               {"registered_server_id": server, "master_registered_server_id": master,
                                **fields})  # fmt: skip


async def test_a_move_under_a_server_behind_levels_it_first(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(5, shape="seed000")
    cluster.sql(1, "CREATE TABLE app.t1 (id INT PRIMARY KEY);")
    cluster.wait_converged()
    cluster.sql(5, "STOP SLAVE;")
    cluster.sql(1, "INSERT INTO app.t1 VALUES (1), (2);")
    newest = cluster.value(1, "@@gtid_binlog_pos")
    await eventually("server 4 with domain 1's newest", lambda: newest in cluster.value(4, "@@gtid_current_pos"))
    assert newest not in cluster.value(5, "@@gtid_current_pos")
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        operation = await repoint(live, cluster_id, ids[4], ids[5])
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert "is first leveled from s4 (server_id 4) in domain(s) 1" in step(operation, "preflight")["detail"]
        assert step(operation, "level_new_master")["state"] == "passed"
    assert newest in cluster.value(5, "@@gtid_current_pos"), "server 5 got domain 1's newest from server 4"
    assert connections(cluster, 4) == {"": (5, "Yes", "Yes")}
    assert connections(cluster, 5) == {"": (3, "No", "No")}, "server 5's own connection stays as it was (stopped)"
    cluster.sql(5, "START SLAVE;")
    cluster.sql(1, "INSERT INTO app.t1 VALUES (3);")
    await eventually("server 4 with the next row, through server 5", lambda: cluster.sql(
        4, "SELECT COUNT(*) FROM app.t1") == [["3"]])  # fmt: skip


async def test_moves_that_would_lose_a_domain_loop_or_need_a_writable_server_leveled_are_refused(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(5, shape="seed000")
    cluster.sql(1, "CREATE TABLE app.t1 (id INT PRIMARY KEY);")
    cluster.sql(2, "CREATE TABLE app.t2 (id INT PRIMARY KEY);")
    cluster.wait_converged()
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        before = {n: connections(cluster, n) for n in (3, 4, 5)}

        dropped = await repoint(live, cluster_id, ids[4], ids[1])
        assert dropped["state"] == "failed"
        assert "s4 (server_id 4) would no longer receive domain(s) 2" in dropped["error"], dropped["error"]

        direct = await repoint(live, cluster_id, ids[3], ids[4], connection="m1")
        assert direct["state"] == "failed" and "would make a replication loop" in direct["error"], direct["error"]

        cluster.sql(5, "STOP SLAVE; SET GLOBAL read_only = 0;")
        cluster.sql(1, "INSERT INTO app.t1 VALUES (1);")
        newest = cluster.value(1, "@@gtid_binlog_pos")
        await eventually("server 4 with domain 1's newest", lambda: newest in cluster.value(4, "@@gtid_current_pos"))
        writable = await repoint(live, cluster_id, ids[4], ids[5])
        assert writable["state"] == "failed"
        assert f"is behind s4 (server_id 4) in domain(s) 1 (s4 (server_id 4) has {newest}" in writable["error"]
        assert "takes writes" in writable["error"]
        cluster.sql(5, "SET GLOBAL read_only = 1; START SLAVE;")
        await eventually("server 5 replicating again", lambda: connections(cluster, 5) == {"": (3, "Yes", "Yes")})

        chain = await repoint(live, cluster_id, ids[5], ids[4])
        assert chain["state"] == "succeeded", (chain["error"], chain["steps"])
        before[5] = connections(cluster, 5)
        through = await repoint(live, cluster_id, ids[3], ids[5], connection="m1")
        assert through["state"] == "failed", through
        assert "through other servers: repointing would make a replication loop" in through["error"]
    assert {n: connections(cluster, n) for n in (3, 4, 5)} == before, "the refusals changed nothing"
