"""Health by meaning on real MariaDB, the seed000 shape (masters s1 and s2 of domains 1 and 2, s3 replicating from
both, s4 and s5 from s3): two roots are a shape, not a fault; s4, delayed on purpose (MASTER_DELAY), holding
transactions within its delay is neither stalled nor lagging; s5, applying in parallel, with domain 1's table locked
by a report, is flagged as stalled in domain 1 with its workers' own words while domain 2 goes on; and the settings
(delay, parallel mode, workers, binlog format) are in the topology; each master could be master now of its own
domain."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pymysql
from fastapi import FastAPI

from ferry_control.services.link_health import STALLED_AFTER_S
from tests.mariadb_cluster import MariadbCluster, eventually
from tests.mariadb_load import register_mariadb, seed000_tables

#: Far beyond the test: every write s4 receives waits, unapplied, for the whole test.
DELAY_S = 600


async def topology(app: FastAPI, client: httpx.AsyncClient, cluster_id: int) -> dict[str, Any]:
    await app.state.collector.run_cycle()
    response = await client.get(f"/api/v1/clusters/{cluster_id}/topology")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def edge_of(graph: dict[str, Any], replica: int) -> dict[str, Any]:
    (edge,) = [e for e in graph["edges"] if e["replica_registered_server_id"] == replica and e["source"] == "replica"]
    return edge  # type: ignore[no-any-return]


async def test_seed000_is_healthy_while_a_locked_parallel_replica_is_flagged_as_stalled_with_its_reason(
    app: FastAPI, client: httpx.AsyncClient, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(5, shape="seed000")
    seed000_tables(cluster, rows=True)
    cluster.sql(4, f"STOP SLAVE ''; CHANGE MASTER '' TO MASTER_DELAY = {DELAY_S}; START SLAVE '';")
    cluster.sql(
        5,
        "STOP SLAVE ''; SET GLOBAL slave_parallel_threads = 4; SET GLOBAL slave_domain_parallel_threads = 2; "
        "SET GLOBAL slave_parallel_mode = 'optimistic'; START SLAVE '';",
    )
    cluster_id, ids = await register_mariadb(client, cluster, name="seed000-health")
    await topology(app, client, cluster_id)

    report = pymysql.connect(unix_socket=cluster.server(5).socket, user="root", autocommit=True)
    try:
        with report.cursor() as c:
            c.execute("LOCK TABLES app.t1 READ")
        cluster.sql(1, "".join(f"INSERT INTO app.t1 VALUES ({row});" for row in range(2, 12)))
        cluster.sql(2, "INSERT INTO app.t2 VALUES (2);")

        async def s5_stalled() -> dict[str, Any] | None:
            graph = await topology(app, client, cluster_id)
            return graph if edge_of(graph, ids[5])["stall"] is not None else None

        graph = await eventually("s5 to be flagged as stalled", s5_stalled, timeout_s=STALLED_AFTER_S + 30)
        stall = edge_of(graph, ids[5])["stall"]
        assert (stall["domains"], stall["transactions_waiting"]) == ([1], 10)
        assert stall["reason"] and "Waiting for table metadata lock" in stall["reason"], stall
        domain2 = cluster.value(2, "@@gtid_binlog_pos")  # s2 writes domain 2 alone
        assert domain2 in cluster.value(5, "@@gtid_slave_pos").split(","), "domain 2 went on meanwhile"

        s4 = edge_of(graph, ids[4])
        assert s4["stall"] is None and s4["settings"]["delay_s"] == DELAY_S
        assert max(lag["transactions"] for lag in s4["lag"].values()) == 10  # held by its delay, on purpose
        s5 = edge_of(graph, ids[5])["settings"]
        assert (s5["parallel_mode"], s5["workers"], s5["domain_workers_max"]) == ("optimistic", 4, 2)
        assert {node["binlog_format"] for node in graph["nodes"]} == {"ROW"}

        matrix = (await client.get(f"/api/v1/clusters/{cluster_id}/positions")).json()
        roots = {row["registered_server_id"]: row["root_of"] for row in matrix["rows"] if row["root_of"]}
        assert roots == {ids[1]: [1], ids[2]: [2]}
        assert {ids[1], ids[2], ids[3]} <= set(matrix["could_be_master"])  # each master of its own domain; the hub

        overview = {item["id"]: item for item in (await client.get("/api/v1/clusters/overview")).json()}[cluster_id]
        assert (overview["health"], overview["problems"], overview["masters"]) == ("healthy", [], ["s1", "s2"])
        (warning,) = overview["warnings"]
        assert warning.startswith("s5 (server_id 5): stalled in domain 1: 10 transactions waiting, no progress for "), (
            warning
        )
        assert overview["worst_lag"]["seconds"] < STALLED_AFTER_S + 30  # s4's delay is not lag
    finally:
        report.close()

    async def s5_applying() -> bool:
        return edge_of(await topology(app, client, cluster_id), ids[5])["stall"] is None

    await eventually("s5 to apply again once the report lets go", s5_applying)
