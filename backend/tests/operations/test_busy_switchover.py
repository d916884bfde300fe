"""Switchovers on a busy MariaDB 10.11 cluster whose single-threaded replicas cannot keep up with the master: durable
servers, a four-client writer in two GTID domains, and each replicated transaction costing 3 ms wherever it is
applied read-only (tests/mariadb_load.py, `replica_cost_s`: the writer's statements logged as statements) — so a
single-threaded replica applies at most ~330 transactions a second whatever the machine while the master commits
~1,000, and one applying in parallel catches up.

- A candidate that applies nothing (a report holds a read lock on its table) is flagged stalled by the dry run, and
  the switchover waits in its catch-up phase, then ends having changed nothing, with both rates and the predicted
  window in its message.
- With the defaults, a candidate that falls behind is named so by the dry run (raise its parallel apply); a
  switchover to it waits in its catch-up phase and then either proceeds inside its budget or ends having changed
  nothing with the two rates and the predicted window; with its parallel apply raised through Ferry the same
  switchover succeeds inside the budget.
- With the cluster's `catch_up_parallel_workers`, five switchovers in a row succeed, interleaved with five careful
  hand sequences (tests/mariadb_hand.py) on the same cluster and load, each candidate trailing by the same number of
  transactions when its switchover starts: Ferry's window median is at most half the hand's (Ferry catches up before
  the window, the hand inside it); each raise is put back.
Nothing acknowledged is lost, and no GTID is errant, after all of it."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable
from typing import Any

import pymysql
import pytest

from ferry_control.core.gtid import seq_by_domain
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.helpers import run_operation, step
from tests.mariadb_cluster import MariadbCluster, eventually
from tests.mariadb_hand import bypassing_users, hand_switchover, master_of, open_all, quote
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

#: The writer: four clients, a thousand statements a second in all, sixteen rows each (parallel apply is not
#: serialised by row locks), each statement costing 3 ms where it is applied read-only.
CLIENTS = 4
RATE = 1_000
KEYS_PER_CLIENT = 16
REPLICA_COST_S = 0.003
#: The budget of the default-settings switchovers: under the window a candidate far behind would need, over what a
#: switchover whose candidate has caught up needs.
BUDGET_S = 1.5
#: How far the candidate trails before the default-settings switchover (a window of seconds at ~330 txn/s).
FAR_BEHIND = 2_000
#: How far each candidate trails when a compared switchover (hand or Ferry) starts.
TRAILING = 400
#: Compared switchovers of each kind.
COMPARED = 5
#: Bound on the wait for a candidate to trail as far as a step needs (the writer on a busy machine: tens a second).
TRAIL_WAIT_S = 120.0
#: Bound on the replicas' convergence after the load (a bound, not an expectation: they apply in parallel by then).
CONVERGE_S = 600.0


def behind(cluster: MariadbCluster, replica: int) -> int:
    """What `replica` lacks of the master's binlog, in transactions (blocking: waited on in a thread, so that the
    writer in the test's event loop goes on meanwhile)."""
    master = seq_by_domain(cluster.value(master_number(cluster), "@@gtid_binlog_pos"))
    have = seq_by_domain(cluster.value(replica, "@@gtid_current_pos"))
    return sum(max(0, seq - have.get(d, 0)) for d, seq in master.items())


async def trail_by(cluster: MariadbCluster, replica: int, transactions: int, what: str) -> None:
    """`replica` made to trail the master by at least `transactions`: its appliers stopped until the writer has
    committed that many more than it applied, then started again, and seen applying, as before. Waiting for a
    single-threaded replica to fall that far behind by itself assumes a writer faster than it, which a machine whose
    cores are both taken does not give: the writer is CPU-bound in the test's process, the replica's cost is not."""
    if await asyncio.to_thread(behind, cluster, replica) < transactions:
        await asyncio.to_thread(cluster.sql, replica, "STOP ALL SLAVES SQL_THREAD")
        try:
            await eventually(what, lambda: behind(cluster, replica) >= transactions, TRAIL_WAIT_S, in_thread=True)
        finally:
            await asyncio.to_thread(cluster.sql, replica, "START ALL SLAVES SQL_THREAD")
    applied = seq_by_domain(await asyncio.to_thread(cluster.value, replica, "@@gtid_current_pos"))
    await eventually(
        f"server {replica} applying again ({what})",
        lambda: seq_by_domain(cluster.value(replica, "@@gtid_current_pos")) != applied,
        in_thread=True,
    )


def master_number(cluster: MariadbCluster) -> int:
    return next(s.number for s in cluster.servers if cluster.value(s.number, "@@read_only") in ("0", 0))


async def parallel_apply(live: Any, cluster_id: int, server_id: int, mode: str, workers: int) -> None:
    """A replica's parallel apply changed through Ferry (the audited, guarded operation)."""
    changed = await run_operation(
        live.app,
        live.client,
        cluster_id,
        "parallel-apply",
        {"registered_server_id": server_id, "mode": mode, "workers": workers},
    )
    assert changed["state"] == "succeeded", (changed["error"], changed["steps"])


@pytest.mark.long
@pytest.mark.filterwarnings("ignore:Unsafe statement written to the binary log")
@pytest.mark.filterwarnings("ignore:SLAVE .* stopped")  # the hand sequence's STOP ALL SLAVES: a note
async def test_a_busy_cluster_switches_over_by_catching_up_first(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3, durable=True, extra_args=["--log-warnings=0"])
    # The writer's sessions log its statements as statements (module doc): that takes BINLOG ADMIN.
    cluster.sql(1, f"GRANT BINLOG ADMIN ON *.* TO {quote(cluster.users.workload.name)}@'%'")
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = MariadbLoadWriter(
            cluster, clients=CLIENTS, domains=2, rate=RATE, keys_per_client=KEYS_PER_CLIENT,
            replica_cost_s=REPLICA_COST_S,
        )  # fmt: skip
        await writer.start()
        sql = await open_all(cluster)
        single_mode = cluster.value(3, "@@slave_parallel_mode")
        try:
            # -- A stalled candidate: a report holds a read lock on the table the writers update, on server 2.
            report = pymysql.connect(unix_socket=cluster.server(2).socket, user="root", autocommit=True)
            try:
                with report.cursor() as c:
                    c.execute(f"LOCK TABLES {LOAD_TABLE} READ")
                start = behind(cluster, 2)
                await eventually(
                    "replica 2 falling behind while locked", lambda: behind(cluster, 2) > start + 100, in_thread=True
                )
                before = shape(cluster)
                dry = await run_operation(
                    live.app,
                    live.client,
                    cluster_id,
                    "switchover",
                    {"candidate_registered_server_id": ids[2], "dry_run": True},
                )
                assert dry["state"] == "succeeded", (dry["error"], dry["steps"])
                assert any("is stalled in domain" in a for a in dry["result"]["advice"]), dry["result"]
                assert dry["result"]["forecast"]["behind"] > 0, dry["result"]["forecast"]
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
            assert step(refused, "catch_up_before_window")["duration_s"] >= 3, refused["steps"]
            assert after == before

            # -- Defaults, a candidate that cannot keep up: server 3 has applied single-threaded since the start.
            await trail_by(cluster, 3, FAR_BEHIND, f"replica 3 trailing by {FAR_BEHIND}")
            dry = await run_operation(
                live.app, live.client, cluster_id, "switchover",
                {"candidate_registered_server_id": ids[3], "dry_run": True, "max_window_s": BUDGET_S},
            )  # fmt: skip
            assert dry["state"] == "succeeded", dry
            # The advice follows the forecast's rates: a domain where the master clearly outpaces the candidate (by
            # half again: far from the verdict's tolerance) is named as falling behind (raise its parallel apply), and
            # no domain is named so where the candidate applies at least as fast. Where this machine's master commits
            # slower than the candidate applies (a starved machine: the writer is CPU-bound, the candidate's cost is
            # not) no domain is, and the window over the budget is then what the dry run has to say.
            rates, advice = dry["result"]["forecast"]["rates"], dry["result"]["advice"]
            falls_behind = [a for a in advice if "falls behind while this load lasts — raise its parallel apply" in a]
            for rate in rates:
                named = [a for a in falls_behind if f"in domain {rate['domain']}: it falls behind" in a]
                if rate["master_commits_per_s"] > 1.5 * rate["candidate_applies_per_s"]:
                    assert named, (rate, advice)
                if rate["master_commits_per_s"] <= rate["candidate_applies_per_s"]:
                    assert not named, (rate, advice)
            assert falls_behind or any("for the predicted window to fit the" in a for a in advice), (rates, advice)
            print(f"the dry run named the candidate falling behind in {len(falls_behind)} of {len(rates)} domains")
            body = {"candidate_registered_server_id": ids[3], "max_window_s": BUDGET_S, "prepare_timeout_s": 4}
            before = shape(cluster)
            first = await run_operation(live.app, live.client, cluster_id, "switchover", body)
            names = [s["name"] for s in first["steps"]]
            assert names[:2] == ["preflight", "catch_up_before_window"], names
            print(f"busy switchover with the defaults and a {BUDGET_S:g} s budget: {first['state']}")
            if first["state"] == "succeeded":
                # It caught up enough to fit the budget: it went on, inside it.
                assert first["result"]["unavailable_s"] <= BUDGET_S, first["result"]
            else:
                # It could not: nothing changed, and the message says why in numbers and what to do.
                assert first["result"]["failure"] == REFUSED, first["error"]
                assert shape(cluster) == before
                error = first["error"]
                assert error.count(" txn/s") >= 2 and "would hold writes for ~" in error, error
                assert f"over the {BUDGET_S:g} s budget" in error and "raise parallel apply" in error, error
                # Parallel apply raised through Ferry: the same switchover now fits its budget.
                await parallel_apply(live, cluster_id, ids[3], "optimistic", 8)
                first = await run_operation(live.app, live.client, cluster_id, "switchover", body)
                assert first["state"] == "succeeded", (first["error"], first["steps"])
                assert first["result"]["unavailable_s"] <= BUDGET_S, first["result"]
            assert_one_master(cluster, 3, "default settings")

            # -- catch_up_parallel_workers, against the hand sequence. The compared moves go between servers 1 and
            # 3, each candidate the previous old master (single-threaded since its demotion); server 2 stays a
            # single-threaded replica throughout.
            patched = await live.client.patch(f"/api/v1/clusters/{cluster_id}", json={"catch_up_parallel_workers": 8})
            assert patched.status_code == 200, patched.text
            # Server 1, demoted with the replaced connection's settings (raised above if the move was refused),
            # applies single-threaded again; then it takes over, and server 3, demoted likewise, does too.
            await parallel_apply(live, cluster_id, ids[1], single_mode, 0)
            levelling = await run_operation(live.app, live.client, cluster_id, "switchover",
                                            {"candidate_registered_server_id": ids[1]})  # fmt: skip
            assert levelling["state"] == "succeeded", (levelling["error"], levelling["steps"])
            await parallel_apply(live, cluster_id, ids[3], single_mode, 0)
            bypassing = bypassing_users(cluster)
            hand: list[float] = []
            ferry: list[float] = []
            for i in range(2 * COMPARED):
                kind = ("hand", "ferry")[(i + i // 2) % 2]  # hand, Ferry, Ferry, hand, hand, …: each promotes 1 and 3
                master = await master_of(sql)
                candidate = 3 if master == 1 else 1
                await trail_by(
                    cluster, candidate, TRAILING, f"s{candidate} trailing by {TRAILING} before compared switchover {i}"
                )
                if kind == "hand":
                    record = await hand_switchover(cluster, sql, master, candidate, bypassing)
                    assert record["ok"], record
                    hand.append(record["window_s"])
                else:
                    operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                                    {"candidate_registered_server_id": ids[candidate]})  # fmt: skip
                    assert operation["state"] == "succeeded", (i, operation["error"], operation["steps"])
                    names = [s["name"] for s in operation["steps"]]
                    assert names[:3] == ["preflight", "raise_parallel_apply", "catch_up_before_window"], names
                    assert names[-1] == "restore_parallel_apply", names
                    raised = operation["result"]["parallel_apply_raised"] or []
                    assert raised and all(r["restored"] for r in raised), raised
                    ferry.append(operation["result"]["unavailable_s"])
                assert_one_master(cluster, candidate, (i, kind))
            print(f"busy switchovers, windows: hand {hand}, Ferry with catch_up_parallel_workers 8 {ferry}")
            assert statistics.median(ferry) <= statistics.median(hand) / 2, (ferry, hand)
            # Every server applies single-threaded again: each raise was for its catch-up only.
            for server in cluster.servers:
                assert int(cluster.value(server.number, "@@slave_parallel_threads")) == 0, server.number
            await writer.stop()
            # The replicas left single-threaded are far behind: parallel apply raised through Ferry lets them
            # converge (what an operator does for a replica that cannot keep up).
            master = master_number(cluster)
            for server in cluster.servers:
                if server.number != master:
                    await parallel_apply(live, cluster_id, ids[server.number], "optimistic", 8)
        finally:
            for connection in sql.values():
                connection.close()
            ledger = await writer.stop()
    assert ledger.unknown == {}, "a switchover broke a client connection mid-statement"
    cluster.wait_converged(CONVERGE_S)  # as the servers replicate now
    assert_nothing_acknowledged_lost(cluster, writer)
    await checksums_equal(cluster)
    assert errant_everywhere(cluster, master_number(cluster)) == {}
