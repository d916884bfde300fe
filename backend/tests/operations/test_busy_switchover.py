"""Switchovers on a busy MariaDB 10.11 cluster: durable servers (sync_binlog=1, innodb_flush_log_at_trx_commit=1), so
the master group-commits eight writers' transactions while a single-threaded replica pays a flush for each (on two
cores it falls behind by hundreds of transactions a second; how far depends on the machine, so nothing here relies
on it — backend/bench/busy_switchover.py measures it).

- A candidate that applies nothing while the master writes (a report holds a read lock on its table) is flagged
  stalled by the dry run, and cannot fit a 0.2 s budget: the switchover waits in its catch-up phase, then ends
  having changed nothing, with both rates and the predicted window in its message.
- With a budget the window fits, it proceeds, and holds writes no longer than that budget; every follower follows
  the new master (one slower than the load is reported following behind).
- With the cluster's `catch_up_parallel_workers`, five switchovers in a row succeed: the candidate applies in parallel
  for the catch-up and is put back to single-threaded after, whatever the outcome.
Nothing acknowledged is lost, and no GTID is errant, after all of it."""

from __future__ import annotations

from collections.abc import Callable

import pymysql
import pytest

from ferry_control.core.gtid import seq_by_domain
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.helpers import run_operation, step
from tests.mariadb_cluster import MariadbCluster, eventually
from tests.mariadb_load import (
    LOAD_TABLE,
    MariadbLoadWriter,
    assert_nothing_acknowledged_lost,
    assert_one_master,
    checksums_equal,
    errant_everywhere,
    register_mariadb,
    shape,
)

#: Writers: a busy master's load (the assertions do not depend on whether the replicas keep up with it).
CLIENTS = 8
#: Bound on the replicas' convergence after the load (a bound, not an expectation: they apply in parallel by then).
CONVERGE_S = 600.0


def master_number(cluster: MariadbCluster) -> int:
    return next(s.number for s in cluster.servers if cluster.value(s.number, "@@read_only") in ("0", 0))


def behind(cluster: MariadbCluster, replica: int) -> int:
    master = seq_by_domain(cluster.value(master_number(cluster), "@@gtid_binlog_pos"))
    have = seq_by_domain(cluster.value(replica, "@@gtid_current_pos"))
    return sum(max(0, seq - have.get(d, 0)) for d, seq in master.items())


@pytest.mark.long
async def test_a_busy_cluster_switches_over_by_catching_up_first(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3, durable=True)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = await MariadbLoadWriter(cluster, clients=CLIENTS, domains=2, rate=100_000).start()
        try:
            # A report holds a read lock on the table the writers update, on the candidate: it applies nothing.
            report = pymysql.connect(unix_socket=cluster.server(2).socket, user="root", autocommit=True)
            try:
                with report.cursor() as c:
                    c.execute(f"LOCK TABLES {LOAD_TABLE} READ")
                start = behind(cluster, 2)
                await eventually("replica 2 falling behind while locked", lambda: behind(cluster, 2) > start + 100)
                before = shape(cluster)
                # The dry run sees what the operator would: the candidate stalled, applying nothing.
                dry = await run_operation(
                    live.app,
                    live.client,
                    cluster_id,
                    "switchover",
                    {"candidate_registered_server_id": ids[2], "dry_run": True},
                )
                assert dry["state"] == "succeeded", dry
                assert any("is stalled in domain" in a for a in dry["result"]["advice"]), dry["result"]
                assert dry["result"]["forecast"]["behind"] > 0, dry["result"]["forecast"]
                # A budget the window cannot fit: it waits out its catch-up bound, then refuses in numbers.
                refused = await run_operation(
                    live.app, live.client, cluster_id, "switchover",
                    {"candidate_registered_server_id": ids[2], "max_window_s": 0.2, "prepare_timeout_s": 3},
                )  # fmt: skip
                after = shape(cluster)
            finally:
                report.close()
            assert refused["state"] == "failed", refused
            assert [s["name"] for s in refused["steps"]] == ["preflight", "catch_up_before_window"], refused["steps"]
            error = refused["error"]
            assert refused["result"]["failure"] == REFUSED, error
            assert "applies 0 txn/s" in error and "commits" in error and "would hold writes indefinitely" in error, (
                error
            )
            assert "over the 0.2 s budget" in error and "parallel apply" in error, error
            waited = step(refused, "catch_up_before_window")["duration_s"]
            assert waited >= 3, refused["steps"]
            assert after == before

            # A budget it fits: it goes on, and writes are held no longer than the budget.
            budget_s = 60.0
            done = await run_operation(
                live.app, live.client, cluster_id, "switchover",
                {"candidate_registered_server_id": ids[2], "max_window_s": budget_s},
            )  # fmt: skip
            assert done["state"] == "succeeded", (done["error"], done["steps"])
            assert done["result"]["unavailable_s"] <= budget_s, done["result"]
            phase = done["result"]["catch_up_phase"]
            assert phase["max_window_s"] == budget_s and phase["rates"], phase
            assert set(done["result"]["window_steps"]) == {
                "old_master_read_only", "wait_in_flight_commits", "candidate_catch_up", "promote_candidate",
            }  # fmt: skip
            assert_one_master(cluster, 2, "generous budget")

            # The cluster lets switchovers raise the candidate's parallel apply for their catch-up.
            patched = await live.client.patch(f"/api/v1/clusters/{cluster_id}", json={"catch_up_parallel_workers": 8})
            assert patched.status_code == 200, patched.text
            windows = []
            for i in range(5):
                operation = await run_operation(live.app, live.client, cluster_id, "switchover", {})
                assert operation["state"] == "succeeded", (i, operation["error"], operation["steps"])
                names = [s["name"] for s in operation["steps"]]
                assert names[:3] == ["preflight", "raise_parallel_apply", "catch_up_before_window"], names
                assert names[-1] == "restore_parallel_apply", names
                raised = operation["result"]["parallel_apply_raised"] or []
                assert all(r["restored"] for r in raised), raised
                windows.append(operation["result"]["unavailable_s"])
                assert operation["result"]["unavailable_s"] <= operation["result"]["catch_up_phase"]["max_window_s"]
                assert_one_master(cluster, master_number(cluster), i)
            # Every server applies single-threaded again: the raise was for the catch-up only.
            for server in cluster.servers:
                assert int(cluster.value(server.number, "@@slave_parallel_threads")) == 0, server.number
            print(f"busy switchovers with catch_up_parallel_workers 8: windows {windows}")
            ledger = await writer.stop()
            # The replicas that stayed single-threaded may be far behind: parallel apply raised through Ferry lets
            # them converge (what an operator does for a replica that cannot keep up).
            master = master_number(cluster)
            for server in cluster.servers:
                if server.number != master:
                    raised = await run_operation(
                        live.app, live.client, cluster_id, "parallel-apply",
                        {"registered_server_id": ids[server.number], "mode": "optimistic", "workers": 8},
                    )  # fmt: skip
                    assert raised["state"] == "succeeded", (raised["error"], raised["steps"])
        finally:
            ledger = await writer.stop()
    assert ledger.unknown == {}, "a switchover broke a client connection mid-statement"
    cluster.wait_converged(CONVERGE_S)  # as the servers replicate now
    assert_nothing_acknowledged_lost(cluster, writer)
    await checksums_equal(cluster)
    assert errant_everywhere(cluster, master_number(cluster)) == {}
