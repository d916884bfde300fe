"""Consistency after the fact: a replica compared with its source chunk by chunk of primary key at the same GTID
position, through the API, on real MariaDB 10.11 servers as Ferry's least-privilege user and on real ferryd nodes.

- Under a load writer on the master, an untouched replica is found equal in every chunk, and replicates afterwards.
- Rows changed and removed on the replica behind replication's back are found in exactly the chunks that hold them,
  with their key ranges and row counts; the check fails naming the table, having changed nothing (the replica
  replicates again).
- On ferryd nodes (one chunk per table, read from a store snapshot), an equal replica is found equal.
- A rejoin that succeeded is followed by a check of the rejoined server (`verify_after_rejoin`).
- Bad requests are refused (422) and a server with no source is refused by the preflight, nothing changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import finished, register, run_operation
from tests.mariadb_cluster import MariadbCluster
from tests.mariadb_load import MariadbLoadWriter, register_mariadb

ROWS = 1_000
CHUNK_ROWS = 100


async def _check(live: Any, cluster_id: int, **body: Any) -> dict[str, Any]:
    response = await live.client.post(f"/api/v1/clusters/{cluster_id}/operations/consistency-check", json=body)
    assert response.status_code == 202, response.text
    return await finished(live.app, live.client, cluster_id, response.json()["id"])


def _running(cluster: MariadbCluster, number: int) -> list[tuple[str, str]]:
    return [(s["Slave_IO_Running"], s["Slave_SQL_Running"]) for s in cluster.replica_status(number)]


def _table(operation: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in operation["result"]["tables"] if t["table"] == name)


async def test_a_replica_is_compared_chunk_by_chunk_under_load_and_drift_is_found_where_it_is(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    values = ", ".join(f"({i}, 'row {i}', {i * 7})" for i in range(1, ROWS + 1))
    cluster.sql(1, f"CREATE TABLE app.items (id INT PRIMARY KEY, name VARCHAR(40), n INT NULL); "
                   f"INSERT INTO app.items VALUES {values};")  # fmt: skip
    cluster.wait_converged()
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = await MariadbLoadWriter(cluster, clients=2, domains=1, rate=200).start()
        try:
            equal = await _check(
                live, cluster_id, registered_server_id=ids[2], chunk_rows=CHUNK_ROWS, chunks_per_stop=3
            )
        finally:
            await writer.stop()
        assert equal["state"] == "succeeded", (equal["error"], equal["steps"])
        result = equal["result"]
        assert result["consistent"] is True and result["chunks_drifted"] == 0
        assert result["source_registered_server_id"] == ids[1]
        items = _table(equal, "app.items")
        assert (items["key"], items["chunks"], items["source_rows"], items["replica_rows"]) == (
            ["id"],
            ROWS // CHUNK_ROWS,
            ROWS,
            ROWS,
        )
        assert result["chunks_checked"] >= items["chunks"]
        assert _running(cluster, 2) == [("Yes", "Yes")]

        # Behind replication's back on the replica: one row changed (chunk of ids 301–400), one removed (ids 801–900).
        cluster.sql(2, "SET SESSION sql_log_bin = 0; UPDATE app.items SET n = -1 WHERE id = 350; "
                       "DELETE FROM app.items WHERE id = 842;")  # fmt: skip
        drift = await _check(live, cluster_id, registered_server_id=ids[2], chunk_rows=CHUNK_ROWS, tables=["app.items"])
    assert drift["state"] == "failed"
    assert drift["result"]["failure"]["kind"] == "step_failed" and drift["result"]["failure"]["changed"] is False
    assert "app.items: 2 of 10 chunk(s) differ" in drift["error"]
    found = _table(drift, "app.items")["drifted"]
    assert [(c["lower"], c["upper"], c["source_rows"], c["replica_rows"]) for c in found] == [
        ([301], [401], 100, 100),
        ([801], [901], 100, 99),
    ]
    assert drift["result"]["consistent"] is False
    assert _running(cluster, 2) == [("Yes", "Yes")], "the replica replicates again after the check"


async def test_a_ferryd_replica_is_found_equal_to_its_source_and_a_rejoin_is_followed_by_a_check(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """replica2, read-only and cut loose (its connection removed), is rejoined to the master: the rejoin is followed
    by a consistency check of it, which finds it equal; replica1, checked on demand, is equal too."""
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(20, domains=(1, 2))
    ferryd.converge()
    ferryd.replica2.post("/v1/replication/main/stop", {})
    ferryd.replica2.post("/v1/replication/main/reset", {"all": True})
    async with live_app(verify_after_rejoin=True) as live:
        cluster_id, ids = await register(live.client, ferryd)
        on_demand = await _check(live, cluster_id, registered_server_id=ids["replica1"])
        rejoin = await run_operation(
            live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["replica2"]}
        )
        assert rejoin["state"] == "succeeded", (rejoin["error"], rejoin["steps"])
        check_id = rejoin["result"]["consistency_check_operation_id"]
        assert check_id is not None, rejoin["result"]
        followed = await finished(live.app, live.client, cluster_id, check_id)
    assert on_demand["state"] == "succeeded", (on_demand["error"], on_demand["steps"])
    assert on_demand["result"]["consistent"] is True and on_demand["result"]["chunks_checked"] >= 1
    assert followed["state"] == "succeeded", (followed["error"], followed["steps"])
    assert followed["requester"] == f"rejoin {rejoin['id']} (verify_after_rejoin)"
    assert followed["result"]["registered_server_id"] == ids["replica2"] and followed["result"]["consistent"] is True
    tables = followed["result"]["tables"]
    assert tables and all(t["source_rows"] == t["replica_rows"] > 0 for t in tables), tables


async def test_bad_requests_and_a_server_without_a_source_are_refused(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/operations/consistency-check"
        for body, field in (
            ({"registered_server_id": ids["replica1"], "chunk_rows": 5}, "chunk_rows"),
            ({"registered_server_id": ids["replica1"], "tables": ["no_schema"]}, "tables"),
            ({"registered_server_id": ids["replica1"], "pause_ms": -1}, "pause_ms"),
        ):
            response = await live.client.post(url, json=body)
            assert response.status_code == 422, response.text
            assert field in response.text
        refused = await _check(live, cluster_id, registered_server_id=ids["master"])
    assert refused["state"] == "failed"
    assert refused["result"]["failure"] == {"kind": "refused", "changed": False, "left": [], "compensation": None}
    assert "replicates from no registered server" in refused["error"]
