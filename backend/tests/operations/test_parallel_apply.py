"""Parallel apply as a managed setting, on real mariadbd 10.11 and real ferryd: a replica's parallel apply changed
through the API (the `parallel_apply` operation) again and again under write load leaves every acknowledged row on
every server, no GTID applied twice or skipped, equal checksums; GET …/parallel-apply reports the mode, workers and
the apply rate against the master's commit rate per domain; bad values are refused with a 4xx and change nothing; a
change is refused while another operation holds the cluster; a raise for catch-up is put back, also by the
reconciler after a crash."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ferry_control.ctl.errors import ExitCode
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from ferry_control.models import ServerKind
from ferry_control.schemas.operation_results import ParallelApplyRaise
from ferry_control.schemas.parallel_apply import ParallelApplySettings
from ferry_control.services.apply_rates import Reading, domain_rates, judge, overall
from ferry_control.services.orchestrator.catch_up_parallel import (
    current,
    raise_for_catch_up,
    restore,
)
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import LOAD_FIELD, LOAD_TABLE, LoadWriter, connection, register, run_operation, serve
from tests.mariadb_cluster import MariadbCluster, driver, eventually
from tests.mariadb_load import MariadbLoadWriter, checksums_equal, errant_everywhere, load_rows, register_mariadb
from tests.operations.test_operation_faults import left_running

# -- the arithmetic ----------------------------------------------------------------------------------------------


def test_rates_and_verdicts_per_domain() -> None:
    master = (Reading(10.0, "1-1-100,2-1-50"), Reading(12.0, "1-1-700,2-1-50"))
    replica = (Reading(10.1, "1-1-90,2-1-50"), Reading(12.1, "1-1-290,2-1-50"))
    one, two = domain_rates(master[0], master[1], replica[0], replica[1])
    assert (one.domain, one.master_commit_rate, one.apply_rate, one.behind) == (1, 300.0, 100.0, 410)
    assert (one.verdict, one.falls_behind_by) == ("falls_behind", 200.0)
    assert one.words == "falls behind by 200 txn/s (410 transactions behind)"
    assert (two.verdict, two.words) == ("idle", "idle: no commits, nothing to apply")
    assert overall([one, two]) == ("falls_behind", "falls behind by 200 txn/s (domain 1)")
    # Faster than the master while behind: it catches up, and says in how long at this load.
    verdict, short, words = judge(100.0, 300.0, 400)
    assert (verdict, short) == ("keeps_up", None) and "catching up 400 transactions in ~2.0 s" in words
    # Within the tolerance (two servers are never read at the same instant): keeps up.
    assert judge(1000.0, 970.0, 12)[0] == "keeps_up"
    assert judge(None, 10.0, 0) == ("unknown", None, "not measured")
    # A domain the first reading does not have: where it started is not known.
    (new,) = domain_rates(Reading(0, ""), Reading(1, "3-1-5"), Reading(0, ""), Reading(1, "3-1-5"))
    assert (new.master_commit_rate, new.verdict) == (None, "unknown")


# -- MariaDB -----------------------------------------------------------------------------------------------------


def mariadb_parallel(cluster: MariadbCluster, number: int) -> tuple[str, str, str, str, str]:
    """As root reads it: slave_parallel_threads, slave_domain_parallel_threads, the connection's Parallel_Mode and
    whether its IO and SQL threads run."""
    threads, domain = cluster.sql(number, "SELECT @@slave_parallel_threads, @@slave_domain_parallel_threads")[0]
    (row,) = cluster.replica_status(number)
    return threads, domain, row["Parallel_Mode"], row["Slave_IO_Running"], row["Slave_SQL_Running"]


async def test_mariadb_parallel_apply_changed_under_load_loses_and_repeats_nothing(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    changes: list[tuple[dict[str, Any], tuple[str, str, str]]] = [
        ({"mode": "optimistic", "workers": 4, "domain_workers_max": 2}, ("4", "2", "optimistic")),
        ({"mode": "conservative"}, ("4", "2", "conservative")),
        ({"workers": 8, "domain_workers_max": 0}, ("8", "0", "conservative")),
        ({"mode": "optimistic", "workers": 0}, ("0", "0", "optimistic")),
        ({"mode": "aggressive", "workers": 16, "domain_workers_max": 16}, ("16", "16", "aggressive")),
    ]
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = await MariadbLoadWriter(cluster, clients=4, domains=2).start()
        try:
            for i, (body, expected) in enumerate(changes):
                ledger = await writer.pause()
                acked = sum(ledger.acked.values())
                writer.resume()
                await eventually(
                    f"more writes before change {i}", lambda n=acked: sum(writer.ledger.acked.values()) > n + 50
                )
                operation = await run_operation(
                    live.app, live.client, cluster_id, "parallel-apply", {"registered_server_id": ids[2], **body}
                )
                assert operation["state"] == "succeeded", (i, operation["error"], operation["steps"])
                assert [s["name"] for s in operation["steps"]] == ["preflight", "pre_hooks", "change", "verify"]
                result = operation["result"]
                after = (str(result["after"]["workers"]), str(result["after"]["domain_workers_max"]),
                         result["after"]["mode"])  # fmt: skip
                assert after == expected, (i, result)
                # The SQL thread of the one connection was stopped and started again at its position.
                assert result["paused"] == [""], (i, result)
                assert mariadb_parallel(cluster, 2) == (*expected, "Yes", "Yes"), i
                assert mariadb_parallel(cluster, 3)[:3] == ("0", "0", "optimistic"), "the other replica untouched"

            measured = await live.client.get(
                f"/api/v1/clusters/{cluster_id}/servers/{ids[2]}/parallel-apply", params={"interval_s": 1.0}
            )
            assert measured.status_code == 200, measured.text
            read = measured.json()
            assert read["kind"] == "mariadb" and read["limits"]["server_wide_workers"] is True
            assert "aggressive" in read["limits"]["modes"] and read["measured_over_s"] == 1.0
            (conn,) = read["connections"]
            assert conn["master_registered_server_id"] == ids[1] and conn["running"] is True
            assert conn["settings"] == {"mode": "aggressive", "workers": 16, "domain_workers_max": 16}
            rates = {d["domain"]: d for d in conn["domains"]}
            assert {1, 2} <= set(rates), conn
            for d in (rates[1], rates[2]):
                assert d["master_commit_rate"] > 0 and d["apply_rate"] > 0, d
                assert d["verdict"] in ("keeps_up", "falls_behind") and d["words"], d
        finally:
            ledger = await writer.stop()

    assert ledger.unknown == {}, "a change broke a client connection mid-statement"
    cluster.wait_converged()
    for server in cluster.servers:
        rows = load_rows(cluster, server.number)
        assert {k: rows[k] for k in ledger.acked} == ledger.acked, (
            f"s{server.number}: an increment lost or applied twice"
        )
    await checksums_equal(cluster)
    assert errant_everywhere(cluster, 1) == {}
    for number in (2, 3):
        assert cluster.replica_status(number)[0]["Last_SQL_Errno"] == "0"


async def test_mariadb_a_replica_that_does_not_apply_falls_behind_by_the_masters_rate(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = await MariadbLoadWriter(cluster, clients=2, domains=1).start()
        try:
            await eventually("writes to go through", lambda: sum(writer.ledger.acked.values()) > 20)
            cluster.sql(3, "STOP SLAVE '' SQL_THREAD")
            read = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}/parallel-apply",
                                          params={"interval_s": 1.0})).json()  # fmt: skip
            (conn,) = read["connections"]
            domain = next(d for d in conn["domains"] if d["domain"] == 1)
            assert domain["apply_rate"] == 0.0 and domain["master_commit_rate"] > 0, domain
            assert all(d["verdict"] == "idle" for d in conn["domains"] if d["domain"] != 1), conn["domains"]
            assert domain["verdict"] == "falls_behind" and domain["falls_behind_by"] == domain["master_commit_rate"]
            assert conn["verdict"] == "falls_behind" and conn["words"].startswith("falls behind by")
            cluster.sql(3, "START SLAVE '' SQL_THREAD")
        finally:
            await writer.stop()


async def test_mariadb_bad_values_are_refused_and_change_nothing(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(2)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        before = mariadb_parallel(cluster, 2)
        url = f"/api/v1/clusters/{cluster_id}/operations/parallel-apply"
        refused = [
            ({"mode": "serial"}, 422, "parallel_apply_invalid", "mode 'serial' is not one of none, minimal"),
            ({"workers": 2, "domain_workers_max": 3}, 422, "parallel_apply_invalid", "domain_workers_max 3"),
            ({"workers": 16384}, 422, "validation_error", "16383"),
            ({"mode": "Optimistic"}, 422, "validation_error", "pattern"),
            ({}, 422, "validation_error", "give at least one of mode, workers, domain_workers_max"),
            ({"workers": 4, "threads": 4}, 422, "validation_error", "threads"),
            ({"connection": "nope", "workers": 4}, 404, "connection_not_found", "has no replication connection 'nope'"),
        ]
        for body, status, code, words in refused:
            response = await live.client.post(url, json={"registered_server_id": ids[2], **body})
            assert response.status_code == status, (body, response.text)
            error = response.json()["error"]
            assert error["code"] == code and words in response.text, (body, error)
        master = await live.client.post(url, json={"registered_server_id": ids[1], "workers": 4})
        assert master.status_code == 404 and master.json()["error"]["code"] == "connection_not_found", master.text
        viewer = await live.client_as("viewer").post(url, json={"registered_server_id": ids[2], "workers": 4})
        assert viewer.status_code == 403, viewer.text
        operations = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
        assert operations == [], "nothing was recorded"
        assert mariadb_parallel(cluster, 2) == before


# -- ferryd ------------------------------------------------------------------------------------------------------


async def test_ferryd_parallel_apply_changed_under_load_loses_and_repeats_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    nodes = ferryd.nodes
    changes = [
        {"mode": "optimistic", "workers": 8, "domain_workers_max": 4},
        {"mode": "conservative"},
        {"workers": 16, "domain_workers_max": 16},
        {"mode": "serial", "workers": 1, "domain_workers_max": 1},
        {"mode": "optimistic", "workers": 4, "domain_workers_max": 2},
    ]
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        writer = await LoadWriter.start(nodes, clients=8, domains=4)
        try:
            for i, body in enumerate(changes):
                applied = connection(ferryd.replica1)["transactions_applied"]
                await eventually(
                    f"the replica to apply more before change {i}",
                    lambda n=applied: connection(ferryd.replica1)["transactions_applied"] > n + 100,
                )
                operation = await run_operation(
                    live.app,
                    live.client,
                    cluster_id,
                    "parallel-apply",
                    {"registered_server_id": ids["replica1"], **body},
                )
                assert operation["state"] == "succeeded", (i, operation["error"], operation["steps"])
                result = operation["result"]
                assert result["paused"] == [], "ferryd takes the change between two batches: nothing is paused"
                shown = connection(ferryd.replica1)
                assert {k: v for k, v in body.items()} == {
                    k: shown["parallel"]["mode" if k == "mode" else k] for k in body
                }, (i, shown["parallel"])
                assert (shown["running"], shown["io_state"], shown["reconnects"]) == (True, "connected", 0), shown
                assert connection(ferryd.replica2)["parallel"] == {"mode": "serial", "workers": 1,
                                                                   "domain_workers_max": 1}  # fmt: skip
            read = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica1']}/parallel-apply",
                                          params={"interval_s": 1.0})).json()  # fmt: skip
            (conn,) = read["connections"]
            assert read["kind"] == "ferry" and read["limits"]["workers_max"] == 256
            assert conn["settings"] == {"mode": "optimistic", "workers": 4, "domain_workers_max": 2}
            assert conn["master_registered_server_id"] == ids["master"]
            assert {d["domain"] for d in conn["domains"]} >= {1, 2, 3, 4}
            assert all(d["master_commit_rate"] > 0 for d in conn["domains"]), conn["domains"]
            paused = await writer.pause()
            assert paused["acked"] > 0
            target = ferryd.master.status()["gtid_binlog_pos"]
            for node in nodes:
                node.wait_for(target)
            checksums = [node.get("/v1/checksums") for node in nodes]
            assert all(c == checksums[0] for c in checksums), checksums
        finally:
            summary = await writer.stop()

    assert summary["unknown"] == {}
    acked_gtids = summary["acked_gtids"]
    assert len(acked_gtids) == len(set(acked_gtids)), "a GTID was acknowledged twice"
    for node in nodes:
        async with await FerryProtocolClient.connect(node.listen) as client:
            for key, acked in summary["acked"].items():
                row = await client.get(LOAD_TABLE, key)
                assert row is not None and row[LOAD_FIELD] == acked, (node.server_id, key, row, acked)
    replica = connection(ferryd.replica1)
    assert replica["last_error"] is None and replica["duplicates_skipped"] == 0


async def test_ferryd_bad_values_are_refused_and_change_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = connection(ferryd.replica1)["parallel"]
        url = f"/api/v1/clusters/{cluster_id}/operations/parallel-apply"
        refused = [
            ({"workers": 0}, "workers 0 is not within 1 to 256"),
            ({"workers": 300}, "workers 300 is not within 1 to 256"),
            ({"mode": "aggressive"}, "mode 'aggressive' is not one of serial, conservative, optimistic"),
            ({"workers": 2, "domain_workers_max": 4}, "domain_workers_max 4 is not within 1 to workers (2)"),
            ({"domain_workers_max": 0}, "domain_workers_max 0"),
        ]
        for body, words in refused:
            response = await live.client.post(url, json={"registered_server_id": ids["replica1"], **body})
            assert response.status_code == 422, (body, response.text)
            error = response.json()["error"]
            assert error["code"] == "parallel_apply_invalid" and words in error["message"], (body, error)
        unknown = await live.client.post(url, json={"registered_server_id": 999_999, "workers": 2})
        assert unknown.status_code == 404, unknown.text
        assert (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json() == []
        assert connection(ferryd.replica1)["parallel"] == before

        # A dry run says what it would set and changes nothing.
        dry = await run_operation(live.app, live.client, cluster_id, "parallel-apply",
                                  {"registered_server_id": ids["replica1"], "workers": 8, "domain_workers_max": 8,
                                   "dry_run": True})  # fmt: skip
        assert dry["state"] == "succeeded" and dry["result"]["after"]["workers"] == 8, dry
        assert [s["name"] for s in dry["steps"]] == ["preflight"]
        assert connection(ferryd.replica1)["parallel"] == before


@pytest.mark.long
async def test_a_change_is_refused_while_another_operation_holds_the_cluster(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    ferryd = ferryd_factory()
    monkeypatch.setenv("FERRY_TEST_PAUSE_AFTER_STEP", "preflight")  # the test hook: operations pause after it
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = connection(ferryd.replica1)["parallel"]
        holding = await live.client.post(f"/api/v1/clusters/{cluster_id}/operations/read-only",
                                          json={"registered_server_id": ids["master"], "read_only": False})  # fmt: skip
        assert holding.status_code == 202, holding.text
        running = holding.json()["id"]

        async def paused() -> bool:
            got = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{running}")).json()
            return any(s["name"] == "preflight" and s["state"] == "passed" for s in got["steps"])

        await eventually("the holding operation to pause after its preflight", paused)
        response = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/operations/parallel-apply",
            json={"registered_server_id": ids["replica1"], "mode": "optimistic", "workers": 8, "domain_workers_max": 8},
        )
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert error["code"] == "operation_running" and error["details"]["operation_id"] == running, error
        assert connection(ferryd.replica1)["parallel"] == before


# -- catch-up raise and restore -----------------------------------------------------------------------------------


async def test_a_catch_up_raise_is_put_back_on_both_kinds(
    settings: Any, ferryd_factory: Callable[..., FerrydCluster], mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    ferryd = ferryd_factory()
    cluster = mariadb_factory(2)
    drivers = DriverFactory(settings)
    node = drivers.for_address(ServerKind.ferry, ferryd.replica1.admin)
    maria = driver(cluster, 2)
    try:
        for d, name in ((node, "main"), (maria, "")):
            had = await current(d, name)
            previous = await raise_for_catch_up(d, name, 8)
            assert previous == had
            raised = await current(d, name)
            assert (raised.workers, raised.domain_workers_max, raised.mode) == (8, 8, "optimistic"), raised
            # Idempotent: raising again changes nothing and returns the raised settings as they are.
            assert await raise_for_catch_up(d, name, 8) == raised
            assert await raise_for_catch_up(d, name, 4) == raised, "never lowered by a raise"
            assert await restore(d, name, previous) is not None
            assert await current(d, name) == had
            assert await restore(d, name, previous) is None, "restoring twice changes nothing"
        assert mariadb_parallel(cluster, 2)[3:] == ("Yes", "Yes")
        assert connection(ferryd.replica1)["running"] is True

        # The connection gone (a promoted candidate): MariaDB's server-wide pool is put back all the same.
        await raise_for_catch_up(maria, "", 6)
        cluster.sql(2, "STOP SLAVE ''; RESET SLAVE '' ALL")
        assert await restore(maria, "", had) is not None
        threads, domain = cluster.sql(2, "SELECT @@slave_parallel_threads, @@slave_domain_parallel_threads")[0]
        assert (int(threads), int(domain)) == (had.workers, had.domain_workers_max)
    finally:
        await drivers.aclose()
        await maria.aclose()


async def test_the_reconciler_puts_back_a_raise_a_dead_instance_left(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        node = live.app.state.drivers.for_address(ServerKind.ferry, ferryd.replica1.admin)
        had = await raise_for_catch_up(node, "main", 8)
        assert connection(ferryd.replica1)["parallel"]["workers"] == 8
        record = ParallelApplyRaise(
            registered_server_id=ids["replica1"], connection="main", previous=had,
            raised=ParallelApplySettings(mode="optimistic", workers=8, domain_workers_max=8),
        )  # fmt: skip
        step = {"name": "catch_up", "state": "running", "started_at": "2026-11-28T03:00:00Z", "finished_at": None,
                "duration_s": None, "detail": None}  # fmt: skip
        operation_id = await left_running(
            live, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]},
            {"parallel_apply_raised": [record.model_dump(mode="json")]}, [step],
        )  # fmt: skip
        assert await live.app.state.reconciler.run_once() == [operation_id]
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        assert operation["state"] == "interrupted", operation
        assert "parallel apply of 'main' raised for catch-up put back" in operation["error"], operation["error"]
        assert operation["result"]["parallel_apply_raised"][0]["restored"] is True
        assert connection(ferryd.replica1)["parallel"] == had.model_dump()


# -- the cluster setting and ferryctl -----------------------------------------------------------------------------


async def test_catch_up_parallel_workers_is_a_cluster_setting_with_bounds(client: Any) -> None:
    created = await client.post("/api/v1/clusters", json={"name": "busy"})
    assert created.status_code == 201 and created.json()["catch_up_parallel_workers"] == 0, created.text
    url = f"/api/v1/clusters/{created.json()['id']}"
    for bad, words in ((-1, "greater than or equal to 0"), (257, "less than or equal to 256"),
                       (None, "cannot be removed: set 0 to turn it off"), ("x", "valid integer")):  # fmt: skip
        refused = await client.patch(url, json={"catch_up_parallel_workers": bad})
        assert refused.status_code == 422 and words in refused.text, (bad, refused.text)
    assert (await client.get(url)).json()["catch_up_parallel_workers"] == 0, "nothing changed"
    changed = await client.patch(url, json={"catch_up_parallel_workers": 8})
    assert changed.status_code == 200 and changed.json()["catch_up_parallel_workers"] == 8, changed.text
    assert (await client.get(url)).json()["catch_up_parallel_workers"] == 8


async def test_ferryctl_shows_rates_and_changes_parallel_apply(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory()
    async with live_app() as live:
        await register(live.client, ferryd, name="orders")
        async with serve(live.app) as url:
            token = live.tokens.operator
            shown = await ferryctl(tmp_path, "parallel-apply", "orders", "replica1", "--interval", "0.5", url=url,
                                   token=token)  # fmt: skip
            assert shown.code == ExitCode.ok, (shown.out, shown.err)
            assert "connection 'main': serial, 1 worker(s), 1 per domain" in shown.out, shown.out
            bad = await ferryctl(tmp_path, "parallel-apply", "orders", "replica1", "--mode", "aggressive", url=url,
                                 token=token)  # fmt: skip
            assert bad.code == ExitCode.usage and "mode 'aggressive' is not one of" in bad.err, bad.err
            run = await ferryctl(tmp_path, "parallel-apply", "orders", "replica1", "--mode", "optimistic",
                                 "--workers", "8", "--domain-workers-max", "8", "--wait", url=url,
                                 token=token)  # fmt: skip
            assert run.code == ExitCode.ok, (run.out, run.err)
            assert "parallel_apply" in run.out and "succeeded" in run.out, run.out
            as_json = await ferryctl(tmp_path, "parallel-apply", "orders", "replica1", "-o", "json", url=url,
                                     token=token)  # fmt: skip
            (conn,) = as_json.json()["connections"]
            assert conn["settings"] == {"mode": "optimistic", "workers": 8, "domain_workers_max": 8}
    assert connection(ferryd.replica1)["parallel"] == {"mode": "optimistic", "workers": 8, "domain_workers_max": 8}
