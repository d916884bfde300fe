"""The orchestrator on real MariaDB 10.11 servers, through the API and the `mariadb` driver as Ferry's least-privilege
user: switchovers back and forth under load in two domains (nothing acknowledged lost, one writable master each
time, everyone replicating from it by GTID, checksums equal, no errant GTID, each window stored); failover on
SIGKILL of the master with semi-sync on, the restarted old master fenced; a manual failover that levels the chosen
replica from its peer by START SLAVE UNTIL; semi-sync moved with the master role by a switchover and by a failover;
refusals that change nothing (errant GTID, no log_bin, replication user missing, wrong passwords), each a named
failing check; undo when the candidate stops applying; a drill with canaries in every domain; a replica's
duplicate-key error through the API, and an operator skipping it (the driver's skip by GTID and its refusals)."""

from __future__ import annotations

import asyncio
import os
import statistics
from collections.abc import Callable
from typing import Any

import pymysql
import pytest

from ferry_control.core.gtid import seq_by_domain
from ferry_control.drivers.errors import ServerConflict
from ferry_control.drivers.mariadb.errors import ReplicationNotConfigured, ReplicationRunning
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.helpers import WebhookReceiver, check, finished, run_operation, serve, step
from tests.mariadb_cluster import WAIT_S, MariadbCluster, driver, eventually
from tests.mariadb_load import (
    MariadbLoadWriter,
    assert_nothing_acknowledged_lost,
    assert_one_master,
    checksums_equal,
    errant_everywhere,
    load_rows,
    register_mariadb,
    shape,
)

#: Switchovers back and forth (backend/bench/mariadb_operations.py switchover runs 20 too and reports the windows).
SWITCHOVERS = int(os.environ.get("FERRY_MARIADB_SWITCHOVERS", "20"))
POLL_INTERVAL_S = 0.2
DETECTION_POLLS = 3


def assert_nothing_acknowledged_after_p(acked_gtids: list[str], stops: list[tuple[int, str]]) -> None:
    """No statement the old master of switchover i acknowledged is past that switchover's P: in each domain, the
    seq_nos after P_i up to P_(i+1) (where the next switchover stopped the new master) are the new master's alone, so an
    acknowledged GTID of the old master's server_id among them was committed after the step said writes had stopped."""
    assert len(stops) >= 20 and acked_gtids, (len(stops), len(acked_gtids))
    bounds = [(server_id, seq_by_domain(p)) for server_id, p in stops]
    late = []
    for text in acked_gtids:
        domain, server_id, seq = (int(x) for x in text.split("-"))
        for i, (old, p) in enumerate(bounds):
            upper = bounds[i + 1][1].get(domain, 2**63) if i + 1 < len(bounds) else 2**63
            if server_id == old and p.get(domain, 0) < seq <= upper:
                late.append((i, text, p))
    assert not late, f"acknowledged after P (switchover, GTID, P): {late[:5]}"


@pytest.mark.long
async def test_switchovers_back_and_forth_under_load_lose_nothing(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """Also the proof the MariaDB in-flight step relies on: under 8 concurrent writers, no statement the old master
    acknowledged is past the position P the step returned (read at once after `SET GLOBAL read_only=1`, which waits
    for the commits in progress itself) — every acknowledged GTID is checked against every switchover's P."""
    cluster = mariadb_factory(3)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = await MariadbLoadWriter(cluster, clients=8, domains=2, rate=4000, record_gtids=True).start()
        windows = []
        stops: list[tuple[int, str]] = []  # (the old master's server_id, P) per switchover
        acked_before = 0
        try:
            for i in range(SWITCHOVERS):
                new = 2 if i % 2 == 0 else 1
                operation = await run_operation(
                    live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids[new]}
                )
                assert operation["state"] == "succeeded", (i, operation["error"], operation["steps"])
                assert {c["name"] for c in operation["result"]["checks"]} >= {
                    "log_bin", "log_slave_updates", "gtid_strict_mode", "binlog_format", "ferry_privileges",
                    "replication_user_present", "replication_login", "no_errant_gtids",
                }  # fmt: skip
                assert (
                    "read-only on waited for every commit in progress"
                    in step(operation, "wait_in_flight_commits")["detail"]
                )
                old = 1 if new == 2 else 2
                stops.append((cluster.server(old).server_id, operation["result"]["position"]))
                windows.append(operation["result"]["unavailable_s"])
                assert_one_master(cluster, new, i)

                ledger = await writer.pause()
                acked = sum(ledger.acked.values())
                assert acked > acked_before, f"no write went through around switchover {i}"
                acked_before = acked
                await checksums_equal(cluster)
                assert errant_everywhere(cluster, new) == {}, i
                writer.resume()
        finally:
            ledger = await writer.stop()
        stored = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()

    assert ledger.unknown == {}, "a switchover broke a client connection mid-statement"
    assert ledger.master_changes >= SWITCHOVERS
    assert_nothing_acknowledged_after_p(ledger.acked_gtids, stops)
    cluster.wait_converged()
    assert_nothing_acknowledged_lost(cluster, writer)
    tables = await checksums_equal(cluster)
    assert "app.load" in tables
    binlog = cluster.value(1, "@@gtid_binlog_pos")
    assert {int(g.split("-")[0]) for g in binlog.split(",")} >= {1, 2}, binlog
    # Each window is stored with its operation.
    assert sorted(o["result"]["unavailable_s"] for o in stored if o["type"] == "switchover") == sorted(windows)
    assert len(windows) == SWITCHOVERS and all(w > 0 for w in windows), windows
    print(f"MariaDB switchover unavailability: median {statistics.median(windows):.3f} s, max {max(windows):.3f} s")


async def assert_refused(live: Any, cluster_id: int, cluster: MariadbCluster, candidate_id: int,
                         failing: set[str]) -> dict[str, Any]:  # fmt: skip
    """A switchover to the candidate fails its preflight on (at least) the named checks and changes nothing."""
    before = shape(cluster)
    operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                    {"candidate_registered_server_id": candidate_id})  # fmt: skip
    assert operation["state"] == "failed", operation
    assert operation["result"]["failure"] == REFUSED, operation["error"]
    failed = {c["name"] for c in operation["result"]["checks"] if not c["passed"]}
    assert failing <= failed, (failing, operation["result"]["checks"])
    assert [s["name"] for s in operation["steps"]] == ["preflight"]
    assert shape(cluster) == before
    return operation


async def test_refusals_change_nothing(live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]) -> None:
    cluster = mariadb_factory(3)
    cluster.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY); INSERT INTO app.t VALUES (1), (2);")
    cluster.wait_converged()
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)

        # An errant GTID on server 2 (a write as root, which read_only does not stop) in domain 0 only.
        cluster.sql(2, "INSERT INTO app.t VALUES (100);")
        errant = await assert_refused(live, cluster_id, cluster, ids[2], {"no_errant_gtids"})
        detail = check(errant, "no_errant_gtids")["detail"]
        assert "domain 0: 0-2-" in detail and "written by the candidate itself" in detail, detail

        # The replication user missing on the candidate (server 3 from here on).
        repl = cluster.users.replication
        cluster.sql(3, f"SET SESSION sql_log_bin = 0; DROP USER '{repl.name}'@'%';")
        missing = await assert_refused(live, cluster_id, cluster, ids[3],
                                       {"replication_user_present", "replication_login"})  # fmt: skip
        assert "1045" in check(missing, "replication_login")["detail"]
        cluster.sql(3, f"SET SESSION sql_log_bin = 0; CREATE USER '{repl.name}'@'%' IDENTIFIED BY '{repl.password}';"
                       f" GRANT REPLICATION SLAVE ON *.* TO '{repl.name}'@'%';")  # fmt: skip

        # The cluster's stored replication password is wrong: replicas could not follow the candidate.
        patched = await live.client.patch(f"/api/v1/clusters/{cluster_id}", json={"replication_password": "wrong-pw"})
        assert patched.status_code == 200, patched.text
        wrong = await assert_refused(live, cluster_id, cluster, ids[3], {"replication_login"})
        assert "Access denied" in check(wrong, "replication_login")["detail"]
        assert check(wrong, "replication_user_present")["passed"]

        # Ferry's own password wrong: no server answers it, and the checks say so with the server's 1045.
        restored = {"replication_password": repl.password, "db_password": "wrong-pw"}
        patched = await live.client.patch(f"/api/v1/clusters/{cluster_id}", json=restored)
        assert patched.status_code == 200, patched.text
        login = await assert_refused(live, cluster_id, cluster, ids[3], {"master_identified"})
        assert "1045: Access denied" in check(login, "master_identified")["detail"], check(login, "master_identified")
        patched = await live.client.patch(
            f"/api/v1/clusters/{cluster_id}", json={"db_password": cluster.users.admin.password}
        )
        assert patched.status_code == 200, patched.text

        # The candidate runs without a binlog: restarted with --skip-log-bin, replicating and read-only as before.
        cluster.extra_args = ("--skip-log-bin",)
        try:
            cluster.restart(3)
        finally:
            cluster.extra_args = ()
        cluster.sql(3, "SET GLOBAL read_only = 1; START SLAVE;")
        cluster.wait_replicating(3)
        no_binlog = await assert_refused(live, cluster_id, cluster, ids[3], {"log_bin"})
        assert check(no_binlog, "log_bin")["detail"].endswith(
            "log_bin=OFF (must be ON: its binlog is what replicas read)"
        )

        # Once the candidate is fit again, the same switchover passes every check.
        cluster.restart(3)
        cluster.sql(3, "SET GLOBAL read_only = 1; START SLAVE;")
        cluster.wait_replicating(3)
        cluster.wait_converged()

        # The connections pooled before the restart were closed by the server: the driver drops them, and the
        # first dry run after it already passes.
        dry = await run_operation(live.app, live.client, cluster_id, "switchover",
                                  {"candidate_registered_server_id": ids[3], "dry_run": True})  # fmt: skip
        assert dry["state"] == "succeeded", (dry["error"], dry["result"])


async def test_undo_when_the_candidate_stops_applying(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """The candidate's SQL thread is stopped (by the pre-operation webhook, so after the preflight) and the master
    gets one more write: the candidate cannot reach the read-only master's position, the switchover gives up and
    undoes — the old master writable again, every server as before."""
    cluster = mariadb_factory(3)
    cluster.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY); INSERT INTO app.t VALUES (1);")
    cluster.wait_converged()
    before = shape(cluster)

    async def stop_candidate(_: Any) -> int:
        await asyncio.to_thread(cluster.sql, 2, "STOP SLAVE SQL_THREAD;")
        await asyncio.to_thread(cluster.sql, 1, "INSERT INTO app.t VALUES (2);")
        return 200

    receiver = WebhookReceiver(stop_candidate)
    async with serve(receiver) as hook_url, live_app(switchover_catch_up_timeout_s=3.0) as live:
        cluster_id, ids = await register_mariadb(live.client, cluster, pre_operation_webhooks=[hook_url])
        operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                        {"candidate_registered_server_id": ids[2]})  # fmt: skip
    assert operation["state"] == "undone", operation
    assert step(operation, "candidate_catch_up")["state"] == "failed"
    assert step(operation, "undo")["state"] == "passed", step(operation, "undo")
    assert "did not reach" in operation["error"], operation["error"]
    assert "promote_candidate" not in [s["name"] for s in operation["steps"]]
    # As before, but for the SQL thread the test stopped.
    after = shape(cluster)
    assert after[1] == before[1] and after[3] == before[3], (before, after)
    assert after[2][0] == "1" and [c[:3] + c[4:] for c in after[2][1]] == [c[:3] + c[4:] for c in before[2][1]]
    assert after[2][1][0][3] == "No"
    cluster.sql(1, "INSERT INTO app.t VALUES (3);")  # the old master takes writes again
    cluster.sql(2, "START SLAVE SQL_THREAD;")
    cluster.wait_converged()


def master_side_semi_sync(cluster: MariadbCluster) -> MariadbCluster:
    """Semi-sync as many deployments set it: the master side (AFTER_SYNC, 10 s) on server 1 only, the replica side on
    the replicas only; one table written and replicated."""
    cluster.sql(1, "SET GLOBAL rpl_semi_sync_master_timeout = 10000; "
                   "SET GLOBAL rpl_semi_sync_master_wait_point = 'AFTER_SYNC'; "
                   "SET GLOBAL rpl_semi_sync_master_enabled = 1;")  # fmt: skip
    for number in (2, 3):
        cluster.sql(number, "STOP SLAVE; SET GLOBAL rpl_semi_sync_slave_enabled = 1; START SLAVE;")
    cluster.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY); INSERT INTO app.t VALUES (1);")
    cluster.wait_converged()
    assert [cluster.value(n, "@@rpl_semi_sync_master_enabled") for n in (1, 2, 3)] == ["1", "0", "0"]
    return cluster


async def acknowledged_by(cluster: MariadbCluster, number: int, replicas: int) -> bool:
    """Whether server `number` is a semi-sync master acknowledged by `replicas` replicas, with no commit that fell
    back to asynchronous."""
    server = driver(cluster, number)
    try:
        state = await server.semi_sync_state()
    finally:
        await server.aclose()
    return state.master_active and state.master_clients == replicas and state.master_unacknowledged_commits == 0


async def test_a_switchover_moves_semi_sync_with_the_master_role(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """Semi-sync as many deployments set it — the master side on the master only, the replica side on the
    replicas — survives a switchover: the candidate takes the old master's master-side settings before it takes
    writes, and the old master replicates with the candidate's connection settings, so it acknowledges too."""
    cluster = master_side_semi_sync(mariadb_factory(3))
    assert cluster.value(1, "@@rpl_semi_sync_slave_enabled") == "0"

    async def acknowledged_by_both(number: int) -> bool:
        return await acknowledged_by(cluster, number, 2)

    await eventually("both replicas acknowledging server 1", lambda: acknowledged_by_both(1))
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                        {"candidate_registered_server_id": ids[2]})  # fmt: skip
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    promoted = step(operation, "promote_candidate")["detail"]
    assert promoted.endswith("semi-sync master on (AFTER_SYNC, 10000 ms), as on s1 (server_id 1)"), promoted
    assert cluster.value(2, "@@rpl_semi_sync_master_enabled") == "1"
    assert cluster.value(2, "@@rpl_semi_sync_master_wait_point") == "AFTER_SYNC"
    assert cluster.value(2, "@@rpl_semi_sync_master_timeout") == "10000"
    # The old master took the candidate's replica side with its connection; the other replica kept its own.
    assert cluster.value(1, "@@rpl_semi_sync_slave_enabled") == "1"
    cluster.sql(2, "INSERT INTO app.t VALUES (2);")
    await eventually("both replicas acknowledging the new master", lambda: acknowledged_by_both(2))


async def test_a_failover_gives_the_new_master_the_semi_sync_the_old_one_had(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """The master side of semi-sync on the master only: after a failover (the old master dead, so its settings are
    what the collector last read), the new master is a semi-sync master too, acknowledged by the other survivor."""
    cluster = master_side_semi_sync(mariadb_factory(3))
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await live.app.state.collector.run_cycle()  # the master's settings, observed
        cluster.kill(1)
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    promoted = step(operation, "promote_candidate")["detail"]
    assert promoted.endswith("semi-sync master on (AFTER_SYNC, 10000 ms), as on s1 (server_id 1) when last seen"), (
        promoted
    )
    new = [n for n, i in ids.items() if i == operation["result"]["new_master_registered_server_id"]][0]
    assert cluster.value(new, "@@rpl_semi_sync_master_enabled") == "1"
    assert cluster.value(new, "@@rpl_semi_sync_master_wait_point") == "AFTER_SYNC"

    def following() -> bool:
        connections = cluster.replica_status(5 - new)
        return len(connections) == 1 and connections[0]["Master_Port"] == str(cluster.server(new).port)

    await eventually("the other survivor following the new master", following)
    cluster.sql(new, "INSERT INTO app.t VALUES (2);")
    await eventually("the other survivor acknowledging the new master", lambda: acknowledged_by(cluster, new, 1))


async def test_failover_on_sigkill_under_load_with_semi_sync(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3, semi_sync=True, durable=True)
    async with live_app(
        collector_enabled=True, poll_interval_s=POLL_INTERVAL_S, poll_timeout_s=1.0,
        failover_detection_polls=DETECTION_POLLS, unreachable_after_failures=DETECTION_POLLS,
    ) as live:  # fmt: skip
        cluster_id, ids = await register_mariadb(live.client, cluster, auto_failover=True)
        writer = await MariadbLoadWriter(cluster, clients=4, domains=2, rate=200.0).start()
        try:
            await eventually(
                "writes in domains 1 and 2 on the master",
                lambda: {g.split("-")[0] for g in cluster.value(1, "@@gtid_binlog_pos").split(",")} >= {"1", "2"},
            )

            async def observed() -> bool:
                server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[1]}")).json()
                return server["health"] == "healthy" and "2-" in (server["gtid_binlog_pos"] or "")

            await eventually("the control plane observing the master writing", observed)
            master = driver(cluster, 1)
            semi_sync = await master.semi_sync_state()
            await master.aclose()
            assert semi_sync.master_active and semi_sync.master_clients == 2, semi_sync
            assert semi_sync.master_unacknowledged_commits == 0, semi_sync  # no fallback to asynchronous
            cluster.kill(1)

            async def failover_id() -> int | None:
                listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
                return next((o["id"] for o in listed if o["type"] == "failover"), None)

            operation_id = await eventually("an automatic failover", failover_id, WAIT_S * 2)
            operation = await finished(live.app, live.client, cluster_id, operation_id)
            assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
            new = [n for n, i in ids.items() if i == operation["result"]["new_master_registered_server_id"]][0]
            assert new in (2, 3)
            ledger = await writer.pause()
            assert sum(ledger.acked.values()) > 0
        finally:
            ledger = await writer.stop()
        survivors = [s.number for s in cluster.servers if s.number != 1]
        other = [n for n in survivors if n != new][0]
        # The most advanced replica won: the other one had nothing it lacked when the failover chose.
        chose = step(operation, "choose_candidate")["detail"]
        assert "ahead of every other replica" in chose["why"] or step(operation, "bring_level")["state"] == "passed"
        port = str(cluster.server(new).port)
        assert [
            (c["Master_Port"], c["Slave_IO_Running"], c["Slave_SQL_Running"], c["Using_Gtid"])
            for c in cluster.replica_status(other)
        ] == [(port, "Yes", "Yes", "Slave_Pos")]
        assert cluster.value(other, "@@read_only") == "1"
        assert cluster.value(new, "@@read_only") == "0"
        await eventually("the survivors to converge", lambda: cluster.value(other, "@@gtid_current_pos")
                         == cluster.value(new, "@@gtid_binlog_pos"))  # fmt: skip
        for number in survivors:  # semi-sync: every acknowledged commit reached a replica before its answer
            rows = load_rows(cluster, number)
            for key, acked in ledger.acked.items():
                assert rows[key] >= acked, (number, key, rows[key], acked)

        # The old master comes back (read_only off by default, not replicating): fenced by the control plane.
        cluster.restart(1)
        await eventually("the fenced old master made read-only", lambda: cluster.value(1, "@@read_only") == "1")
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[1]}")).json()
        assert server["fenced"] is True
        assert cluster.replica_status(1) == []  # not repointed until an operator acts


async def test_a_drill_writes_canaries_in_every_domain_and_verifies(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    for domain in (1, 2):
        cluster.sql(1, f"SET SESSION gtid_domain_id = {domain}; CREATE TABLE app.t{domain} (id INT PRIMARY KEY);"
                       f" INSERT INTO app.t{domain} VALUES (1);")  # fmt: skip
    cluster.wait_converged()
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        response = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/drills/runs",
            json={"candidate_strategy": "fixed", "candidate_registered_server_id": ids[2], "switch_back": True},
        )
        assert response.status_code == 202, response.text
        run_id = response.json()["id"]
        operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{run_id}")).json()
        assert (run["state"], run["passed"], run["reasons"]) == ("passed", True, [])
        assert run["rto_s"] > 0 and run["details"]["switch_back"]["unavailable_s"] > 0
        canaries = step(operation, "write_canaries")["detail"]
        assert set(canaries) == {"0", "1", "2"}, canaries
        assert all(g.startswith(f"{d}-1-") for d, g in canaries.items()), canaries
        assert step(operation, "verify_canaries")["detail"]["missing"] == []
        assert step(operation, "verify_checksums")["detail"]["problem"] is None
        # The live writer followed the master (Ferry's user may write despite read_only: its canary writes refuse
        # themselves on a read-only server) and every canary it was told had committed is everywhere.
        writer = run["canary_writer"]
        assert all(writer["phases"][p]["acknowledged"] > 0 for p in ("before", "after")), writer["phases"]
        assert (writer["lost"], writer["duplicated"], writer["verified"]) == (0, 0, True), writer
        assert all(w["window_s"] > 0 for w in writer["windows"]) and len(writer["windows"]) == 2, writer["windows"]
    assert_one_master(cluster, 1)
    names = {row[0] for row in cluster.sql(3, "SELECT name FROM ferry.canaries")}
    assert {f"run{run_id}_d{d}" for d in (0, 1, 2)} <= names, names
    assert len(names) >= 3 + writer["acknowledged"], (len(names), writer["acknowledged"])


def duplicate_key_on_server_3(cluster: MariadbCluster) -> MariadbCluster:
    """Server 3 gets a row of its own (not binlogged), then the master writes the same key: server 3's SQL thread
    stops on 1062."""
    cluster.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY);")
    cluster.wait_converged()
    cluster.sql(3, "SET SESSION sql_log_bin = 0; INSERT INTO app.t VALUES (7);")
    cluster.sql(1, "INSERT INTO app.t VALUES (7);")
    return cluster


async def test_a_replicas_duplicate_key_error_is_shown_through_the_api(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = duplicate_key_on_server_3(mariadb_factory(3))
    async with live_app(collector_enabled=True, poll_interval_s=POLL_INTERVAL_S) as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)

        async def broken_edge() -> dict[str, Any] | None:
            graph = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
            edges = [e for e in graph["edges"] if e.get("last_error_code")]
            return edges[0] if edges else None

        edge = await eventually("the topology to show server 3's replication error", broken_edge)
    assert edge["last_error_code"] == "1062", edge
    assert "Duplicate entry '7' for key 'PRIMARY'" in edge["last_error_message"], edge
    server_error = cluster.replica_status(3)[0]["Last_SQL_Error"]
    assert edge["last_error_message"] in server_error or server_error in edge["last_error_message"], (
        edge,
        server_error,
    )


async def test_an_operator_skips_the_duplicate_key_that_stopped_a_replica_and_it_replicates_again(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = duplicate_key_on_server_3(mariadb_factory(3))
    failing = cluster.value(1, "@@gtid_binlog_pos")
    await eventually(
        "server 3's SQL thread to stop on the duplicate key",
        lambda: cluster.replica_status(3)[0]["Last_SQL_Errno"] == "1062" or None,
    )
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        url = f"/api/v1/clusters/{cluster_id}/operations/skip-transactions"
        running = await live.client.post(url, json={"registered_server_id": ids[2]})
        assert running.status_code == 409 and running.json()["error"]["code"] == "connection_running", running.text
        operation = await run_operation(
            live.app, live.client, cluster_id, "skip-transactions", {"registered_server_id": ids[3]}
        )
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    result = operation["result"]
    assert result["skipped_gtids"] == [failing] and result["replicating"] is True, result
    assert result["stopped_by"]["code"] == "1062", result["stopped_by"]
    # Named ahead from the master's binlog (the dry run's preview shows the same), then by the replica's relay log.
    assert step(operation, "identify")["detail"]["skipped_gtids"] == [failing]
    assert result["skipped_gtids_source"] == "the relay log of s3 (server_id 3)"
    assert f"{failing} was skipped on s3 (server_id 3)" in result["data_loss"]
    status = cluster.replica_status(3)[0]
    assert (status["Slave_SQL_Running"], status["Last_SQL_Errno"], status["Skip_Counter"]) == ("Yes", "0", "0")
    assert cluster.replica_status(2)[0]["Last_SQL_Errno"] == "0", "the other replica was not touched"
    cluster.sql(1, "INSERT INTO app.t VALUES (8);")
    cluster.wait_converged()
    assert cluster.sql(3, "SELECT id FROM app.t ORDER BY id;") == [["7"], ["8"]]


async def test_the_mariadb_driver_skips_exactly_the_next_transactions_by_gtid_and_refuses_with_the_servers_codes(
    mariadb_factory: Callable[..., MariadbCluster],
) -> None:
    cluster = mariadb_factory(2)
    replica = driver(cluster, 2)
    try:
        with pytest.raises(ReplicationRunning) as running:
            await replica.skip_transactions("", 1)
        assert running.value.errno == 1198 and "run STOP SLAVE" in running.value.message, running.value
        with pytest.raises(ReplicationNotConfigured) as unknown:
            await replica.skip_transactions("nope", 1)
        assert unknown.value.errno == 1617, unknown.value

        # Its SQL thread stopped, two transactions received in two domains: skipping one passes over the first.
        cluster.sql(2, "STOP SLAVE SQL_THREAD;")
        before = cluster.value(2, "@@gtid_slave_pos")
        cluster.sql(1, "SET SESSION gtid_domain_id = 1; CREATE TABLE app.d1 (id INT PRIMARY KEY);")
        first = next(g for g in cluster.value(1, "@@gtid_binlog_pos").split(",") if g.startswith("1-"))
        cluster.sql(1, "SET SESSION gtid_domain_id = 2; CREATE TABLE app.d2 (id INT PRIMARY KEY);")
        master_pos = cluster.value(1, "@@gtid_binlog_pos")
        await eventually(
            "server 2 to receive both", lambda: set(master_pos.split(",")) <= set(
                cluster.replica_status(2)[0]["Gtid_IO_Pos"].split(",")) or None,
        )  # fmt: skip
        with pytest.raises(ServerConflict) as short:
            await replica.skip_transactions("", 3)
        assert short.value.code == "not_received" and "received 2 transaction(s)" in short.value.message
        assert cluster.value(2, "@@gtid_slave_pos") == before, "a refused skip changes nothing"

        skipped = await replica.skip_transactions("", 1)
        assert (skipped.gtids, skipped.pending) == ((first,), False)
        await replica.start_replication("")
        cluster.wait_converged()
        tables = cluster.sql(2, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app';")
        assert sorted(t[0] for t in tables) == ["d2"], "domain 1's transaction was skipped, domain 2's applied"
    finally:
        await replica.aclose()


async def test_on_a_parallel_replica_the_skip_names_the_transaction_that_failed_not_the_oldest_waiting(
    mariadb_factory: Callable[..., MariadbCluster],
) -> None:
    """A parallel replica: domain 1's transaction waits on a lock a session holds on the replica while domain 2's,
    later in the relay log, fails on a duplicate key. The skip passes over the one the error names (found by its
    event's master position), never the oldest transaction not committed; domain 1 applies once the lock goes."""
    cluster = mariadb_factory(2)
    cluster.sql(2, "STOP SLAVE; SET GLOBAL slave_parallel_threads = 4; SET GLOBAL slave_domain_parallel_threads = 2; "
                   "SET GLOBAL slave_parallel_mode = 'optimistic'; START SLAVE;")  # fmt: skip
    cluster.sql(1, "SET SESSION gtid_domain_id = 1; CREATE TABLE app.a (id INT PRIMARY KEY); "
                   "SET SESSION gtid_domain_id = 2; CREATE TABLE app.b (id INT PRIMARY KEY);")  # fmt: skip
    cluster.wait_converged()
    cluster.sql(2, "SET SESSION sql_log_bin = 0; INSERT INTO app.b VALUES (1);")
    lock = pymysql.connect(unix_socket=cluster.server(2).socket, user="root", autocommit=True)
    try:
        with lock.cursor() as c:
            c.execute("LOCK TABLES app.a READ")
        cluster.sql(1, "SET SESSION gtid_domain_id = 1; INSERT INTO app.a VALUES (1);")
        cluster.sql(1, "SET SESSION gtid_domain_id = 2; INSERT INTO app.b VALUES (1);")
        failing = next(g for g in cluster.value(1, "@@gtid_binlog_pos").split(",") if g.startswith("2-"))
        await eventually("the duplicate key error", lambda: cluster.replica_status(2)[0]["Last_SQL_Errno"] == "1062")
    finally:
        lock.close()  # domain 1 may now commit; the SQL thread stops
    await eventually("the SQL thread stopped", lambda: cluster.replica_status(2)[0]["Slave_SQL_Running"] == "No")
    replica = driver(cluster, 2)
    try:
        skipped = await replica.skip_transactions("", 1)
        assert skipped.gtids == (failing,), (skipped, cluster.replica_status(2)[0])
        await replica.start_replication("")
    finally:
        await replica.aclose()
    cluster.wait_converged()
    assert cluster.sql(2, "SELECT id FROM app.a") == [["1"]], "domain 1's transaction applied"


async def test_a_skip_on_a_multi_source_replica_pauses_its_other_connection_for_the_moment_of_the_skip(
    mariadb_factory: Callable[..., MariadbCluster],
) -> None:
    """The two-master shape's hub, server 3, replicates master 1 (connection m1, domain 1) and master 2 (m2,
    domain 2). m1 stops on a duplicate key; MariaDB takes the new gtid_slave_pos only with every connection stopped,
    so m2 is stopped for that moment and started again — and keeps replicating domain 2 from where it was."""
    cluster = mariadb_factory(5, shape="seed000")
    cluster.sql(1, "CREATE TABLE app.m1 (id INT PRIMARY KEY);")
    cluster.sql(2, "CREATE TABLE app.m2 (id INT PRIMARY KEY);")
    cluster.wait_converged()
    cluster.sql(3, "SET SESSION sql_log_bin = 0; INSERT INTO app.m1 VALUES (1);")
    cluster.sql(1, "INSERT INTO app.m1 VALUES (1);")
    failing = cluster.value(1, "@@gtid_binlog_pos")

    def m1_stopped() -> bool:
        rows = {r["Connection_name"]: r for r in cluster.replica_status(3)}
        return rows["m1"]["Slave_SQL_Running"] == "No" and rows["m1"]["Last_SQL_Errno"] == "1062"

    await eventually("m1 stopped by the duplicate key", m1_stopped)
    replica = driver(cluster, 3)
    try:
        skipped = await replica.skip_transactions("m1", 1)
        assert (skipped.gtids, skipped.paused) == ((failing,), ("m2",)), skipped
        rows = {r["Connection_name"]: r for r in cluster.replica_status(3)}
        assert (rows["m2"]["Slave_IO_Running"], rows["m2"]["Slave_SQL_Running"]) != ("No", "No"), "m2 runs again"
        await replica.start_replication("m1")
    finally:
        await replica.aclose()
    cluster.sql(1, "INSERT INTO app.m1 VALUES (2);")
    cluster.sql(2, "INSERT INTO app.m2 VALUES (1);")
    cluster.wait_converged()
    assert cluster.sql(3, "SELECT id FROM app.m2") == [["1"]], "domain 2 replicated through the pause"


async def test_a_skip_never_moves_a_busy_other_connections_domain_back(
    mariadb_factory: Callable[..., MariadbCluster],
) -> None:
    """While m1 is skipped on server 3, master 2 keeps writing increments in domain 2 as fast as it can, so m2 applies
    up to the moment it is paused: the skip writes back only domain 1, read after the pause, and not one of domain
    2's increments is applied twice (server 3's counters equal master 2's) nor stops m2 on an error."""
    cluster = mariadb_factory(5, shape="seed000")
    cluster.sql(1, "CREATE TABLE app.m1 (id INT PRIMARY KEY);")
    cluster.wait_converged()
    cluster.sql(3, "SET SESSION sql_log_bin = 0; INSERT INTO app.m1 VALUES (1);")
    cluster.sql(1, "INSERT INTO app.m1 VALUES (1);")

    def m1_stopped() -> bool:
        rows = {r["Connection_name"]: r for r in cluster.replica_status(3)}
        return rows["m1"]["Slave_SQL_Running"] == "No" and rows["m1"]["Last_SQL_Errno"] == "1062"

    await eventually("m1 stopped by the duplicate key", m1_stopped)
    writer = await MariadbLoadWriter(cluster, clients=2, domains=2, rate=2000.0, masters={1: 1, 2: 2}).start()
    replica = driver(cluster, 3)
    try:
        await eventually("domain 2's increments applied on server 3", lambda: any(
            n > 5 for k, n in load_rows(cluster, 3).items() if k.startswith("d2")))  # fmt: skip
        skipped = await replica.skip_transactions("m1", 1)
        assert skipped.paused == ("m2",), skipped
        await replica.start_replication("m1")
        await eventually("more of domain 2 after the skip", lambda: sum(
            n for k, n in load_rows(cluster, 3).items() if k.startswith("d2")) > 50)  # fmt: skip
    finally:
        await replica.aclose()
        ledger = await writer.stop()
    cluster.wait_converged()
    rows = {r["Connection_name"]: r for r in cluster.replica_status(3)}
    assert (rows["m2"]["Last_SQL_Errno"], rows["m2"]["Slave_SQL_Running"]) == ("0", "Yes"), rows["m2"]
    on_master, on_hub = load_rows(cluster, 2), load_rows(cluster, 3)
    for key, acked in ledger.acked.items():
        if key.startswith("d2"):
            assert on_hub[key] == on_master[key] == acked, (key, on_hub[key], on_master[key], acked)


async def test_manual_failover_levels_the_chosen_replica_from_its_peer(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """Server 2 has the newest of domain 1, server 3 the newest of domain 2 (each applied the master's binlog UNTIL
    its domain only): neither is ahead in every domain, so the chosen one first gets the other's domain by START
    SLAVE UNTIL from its peer, then is promoted; the other follows it and both end with every transaction."""
    cluster = mariadb_factory(3)
    cluster.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY);")
    start = cluster.wait_converged()
    for n in (2, 3):
        cluster.sql(n, "STOP SLAVE;")
    cluster.sql(1, "SET SESSION gtid_domain_id = 1; INSERT INTO app.t VALUES (1), (2); INSERT INTO app.t VALUES (3);")
    cluster.sql(1, "SET SESSION gtid_domain_id = 2; INSERT INTO app.t VALUES (4); INSERT INTO app.t VALUES (5);")
    everything = cluster.value(1, "@@gtid_binlog_pos")
    newest = {g.split("-")[0]: g for g in everything.split(",")}
    cluster.sql(2, f"START SLAVE UNTIL master_gtid_pos = '{start},{newest['1']}';")
    cluster.sql(3, f"START SLAVE UNTIL master_gtid_pos = '{start},{newest['2']}';")
    for n, domain in ((2, "1"), (3, "2")):
        await eventually(f"server {n} at its UNTIL in domain {domain}",
                         lambda n=n, d=domain: newest[d] in cluster.value(n, "@@gtid_slave_pos"))  # fmt: skip
    assert "2-1-" not in cluster.value(2, "@@gtid_current_pos"), cluster.value(2, "@@gtid_current_pos")
    assert "1-1-" not in cluster.value(3, "@@gtid_current_pos"), cluster.value(3, "@@gtid_current_pos")
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        cluster.kill(1)
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
    assert "no replica is ahead in every domain" in step(operation, "choose_candidate")["detail"]["why"]
    assert step(operation, "bring_level")["state"] == "passed", step(operation, "bring_level")
    new = [n for n, i in ids.items() if i == operation["result"]["new_master_registered_server_id"]][0]
    other = 5 - new
    assert cluster.value(new, "@@read_only") == "0" and cluster.replica_status(new) == []
    want = sorted(everything.split(","))
    assert sorted(cluster.value(new, "@@gtid_current_pos").split(",")) == want
    await eventually("the other survivor to have every transaction",
                     lambda: sorted(cluster.value(other, "@@gtid_current_pos").split(",")) == want)  # fmt: skip
    assert [c["Master_Port"] for c in cluster.replica_status(other)] == [str(cluster.server(new).port)]
    rows = {n: cluster.sql(n, "SELECT id FROM app.t ORDER BY id") for n in (new, other)}
    assert rows[new] == rows[other] == [[str(i)] for i in range(1, 6)], rows
