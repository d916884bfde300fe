"""Planned switchover of an intermediate master on real MariaDB 10.11, the two-master shape (masters 1 and 2 writing
domains 1 and 2, server 3 a multi-source replica of both over `m1` and `m2`, servers 4 and 5 below it): server 3's
role goes to server 5 and back, round after round, under load in both domains. Each time the new hub replicates
`m1` from master 1 and `m2` from master 2 under the same names, the old hub and the other replica replicate from it
over the default connection; the masters' writers never see a refusal; every acknowledged row is on every server of
its domain, and the servers below the masters have equal checksums; none has a GTID of its own (nothing errant);
each moved server's replication gap is reported. A dry run shows the plan per domain and changes nothing; a
candidate that falls behind is undone; the API SIGKILLed after each move is reconciled (undone before the candidate
took the hub's connections, else completed)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pymysql
import pytest

from ferry_control.ctl.errors import ExitCode
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import LiveFactory
from tests.failure_shapes import UNDONE
from tests.helpers import finished, run_operation, serve, step
from tests.mariadb_cluster import WAIT_S, MariadbCluster, driver, eventually
from tests.mariadb_load import MariadbLoadWriter, load_rows, register_mariadb, seed000_tables
from tests.operations.test_operation_faults import (
    ApiProcess,
    app_settings,
    fault_database,
    killed_after,
    operator_token,
)

__all__ = ["fault_database"]  # a fixture, imported for this module's tests

#: Round trips s3 → s5 → s3 (backend/bench/hub_switchover.py measures the same moves).
ROUND_TRIPS = int(os.environ.get("FERRY_HUB_ROUND_TRIPS", "10"))
#: Which servers hold each domain's rows: its master and everything below the hub.
HOLDERS = {1: (1, 3, 4, 5), 2: (2, 3, 4, 5)}


def connections(cluster: MariadbCluster, number: int) -> dict[str, tuple[str, str, str]]:
    """Server `number`'s connections: name → (master's server number, IO running, SQL running)."""
    by_port = {str(s.port): s.number for s in cluster.servers}
    return {
        c["Connection_name"]: (by_port.get(c["Master_Port"], c["Master_Port"]), c["Slave_IO_Running"],
                               c["Slave_SQL_Running"])
        for c in cluster.replica_status(number)
    }  # fmt: skip


def assert_hub(cluster: MariadbCluster, hub: int) -> None:
    """`hub` replicates m1 from master 1 and m2 from master 2; the other two below-hub servers from it."""
    assert connections(cluster, hub) == {"m1": (1, "Yes", "Yes"), "m2": (2, "Yes", "Yes")}, hub
    for number in {3, 4, 5} - {hub}:
        assert connections(cluster, number) == {"": (hub, "Yes", "Yes")}, (hub, number)


def own_gtids(cluster: MariadbCluster, number: int) -> list[str]:
    """GTIDs in server `number`'s binlog state that it originated itself in domain 1 or 2 (errant)."""
    state = cluster.value(number, "@@gtid_binlog_state")
    return [g for g in state.split(",") if g and g.split("-")[0] in ("1", "2") and g.split("-")[1] == str(number)]


@pytest.mark.long
async def test_the_hub_moves_to_a_replica_and_back_under_load_in_both_domains(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(5, shape="seed000")
    seed000_tables(cluster)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        dry = await run_operation(live.app, live.client, cluster_id, "switchover",
                                  {"candidate_registered_server_id": ids[5], "dry_run": True})  # fmt: skip
        assert dry["state"] == "succeeded", (dry["error"], dry["steps"])
        plan = dry["result"]["plan"]
        assert plan["source"] == "s3 (server_id 3)" and plan["candidate"] == "s5 (server_id 5)"
        assert plan["afterwards"]["s5 (server_id 5)"] == ["'m1' from s1 (server_id 1)",
                                                                "'m2' from s2 (server_id 2)"]  # fmt: skip
        assert plan["afterwards"]["s3 (server_id 3)"] == ["(default connection) from s5 (server_id 5)"]
        assert set(plan["positions"]["s3 (server_id 3)"]) >= {"1", "2"}, plan["positions"]
        assert_hub(cluster, 3)  # the dry run moved nothing

        writer = await MariadbLoadWriter(cluster, clients=4, domains=2, rate=200.0, masters={1: 1, 2: 2}).start()
        gaps: list[float] = []
        try:
            for _ in range(ROUND_TRIPS):
                for new in (5, 3):
                    operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                                    {"candidate_registered_server_id": ids[new]})  # fmt: skip
                    assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
                    assert step(operation, "hub_stops_receiving")["state"] == "passed"
                    assert_hub(cluster, new)
                    reported = operation["result"]["replication_gaps_s"]
                    assert set(reported) == {f"s{n} (server_id {n})" for n in (3, 4, 5)}, reported
                    gaps += reported.values()
        finally:
            ledger = await writer.stop()
    assert ledger.refused == 0 and not ledger.unknown, "the masters kept taking writes throughout"
    assert sum(ledger.acked.values()) > 0
    cluster.wait_converged()
    for number in range(1, 6):
        rows = load_rows(cluster, number)
        for key, acked in ledger.acked.items():
            domain = int(key[1])
            if number in HOLDERS[domain]:
                assert rows[key] == acked, (number, key, rows[key], acked)
    for number in (3, 4, 5):
        assert own_gtids(cluster, number) == [], f"server {number} has errant GTIDs"
    assert load_rows(cluster, 3) == load_rows(cluster, 4) == load_rows(cluster, 5)
    drivers = [driver(cluster, n) for n in (3, 4, 5)]
    try:
        sums = [await d.checksums() for d in drivers]
    finally:
        for d in drivers:
            await d.aclose()
    assert len({s.position for s in sums}) == 1 and all(dict(s.tables) == dict(sums[0].tables) for s in sums), [
        (s.position, dict(s.tables)) for s in sums
    ]  # the servers below the masters hold both domains: the same tables at the same position
    assert max(gaps) < 60, gaps  # bounded by the operation's own waits; figures in docs/benchmarks.md


@pytest.mark.long
async def test_a_hub_dry_run_names_each_domains_source_the_settings_carried_over_and_a_delayed_candidate(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """The hub's `m1` applies in conservative parallel mode and ignores a table; server 4 replicates 30 s behind on
    purpose (MASTER_DELAY 30). A dry run to server 4 names masters 1 and 2 as what sends domains 1 and 2 after the
    hub's position, over `m1` and `m2`; writes the default connection as such; lists each connection the move makes
    with what it carries — server 4's `m1` the hub's parallel mode but not its filter, the hub's connection to server
    4 server 4's settings without its delay, server 5's its own — and flags server 4's delay in its advice and its
    candidate choice. A dry run left to choose takes server 5 and says why not server 4. Nothing moves."""
    cluster = mariadb_factory(5, shape="seed000")
    cluster.sql(3, "STOP SLAVE 'm1'; SET GLOBAL m1.slave_parallel_mode = 'conservative'; "
                   "SET GLOBAL m1.replicate_ignore_table = 'app.ignored'; START SLAVE 'm1';")  # fmt: skip
    cluster.sql(4, "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 30; START SLAVE;")
    seed000_tables(cluster)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        dry = await run_operation(live.app, live.client, cluster_id, "switchover",
                                  {"candidate_registered_server_id": ids[4], "dry_run": True})  # fmt: skip
        assert dry["state"] == "succeeded", (dry["error"], dry["steps"])
        s1, s2, s3, s4, s5 = (f"s{n} (server_id {n})" for n in range(1, 6))
        plan = dry["result"]["plan"]
        for domain, master, name in ((1, s1, "m1"), (2, s2, "m2")):
            lender = plan["lenders"][f"domain {domain}"]
            assert re.fullmatch(rf"{re.escape(s3)} up to {domain}-{domain}-\d+, then {re.escape(master)} over '{name}'",
                                lender), lender  # fmt: skip
        assert plan["afterwards"][s3] == [f"(default connection) from {s4}"]
        assert plan["afterwards"][s5] == [f"(default connection) from {s4}"]
        moved = {(m["server"], m["connection"]): m for m in plan["moved"]}
        assert set(moved) == {(s4, "m1"), (s4, "m2"), (s3, ""), (s5, "")}, plan["moved"]
        m1 = moved[(s4, "m1")]
        assert m1["master"] == s1 and m1["settings_from"] == f"as on {s3}'s 'm1' to {s1}", m1
        assert "parallel mode conservative" in " ".join(m1["carried"]), m1
        assert m1["not_carried"] == ["replicate_ignore_table = app.ignored"], m1
        assert not any("replicate_ignore_table" in w for w in m1["carried"]), m1
        hub = moved[(s3, "")]
        assert hub["master"] == s4 and hub["settings_from"].startswith(f"as on {s4}'s (default connection) to {s3}")
        assert hub["not_carried"] == ["delay 30 s"] and not any(w.startswith("delay") for w in hub["carried"]), hub
        assert moved[(s5, "")]["settings_from"] == "its own, kept"
        note = f"{s4} replicates 30 s behind on purpose (MASTER_DELAY 30)"
        (advice,) = dry["result"]["advice"]
        assert advice.startswith(f"{note}: once {s3} stops receiving"), advice
        assert "more than 10 s" in advice and f"nor does {s3}'s to it" in advice, advice
        chosen = next(c for c in dry["result"]["checks"] if c["name"] == "candidate_chosen")
        assert "; it replicates 30 s behind on purpose (MASTER_DELAY 30): it would take" in chosen["detail"], chosen
        assert f"only after applying what {s3} received in its last 30 s" in chosen["detail"], chosen

        best = await run_operation(live.app, live.client, cluster_id, "switchover",
                                   {"source_registered_server_id": ids[3], "dry_run": True})  # fmt: skip
        assert best["state"] == "succeeded", (best["error"], best["steps"])
        assert best["result"]["new_master_registered_server_id"] == ids[5]
        chosen = next(c for c in best["result"]["checks"] if c["name"] == "candidate_chosen")
        assert chosen["detail"].endswith(f"; never chosen automatically: {note}"), chosen
        assert not best["result"].get("advice"), best["result"]
    assert connections(cluster, 3) == {"m1": (1, "Yes", "Yes"), "m2": (2, "Yes", "Yes")}
    assert connections(cluster, 4) == {"": (3, "Yes", "Yes")}
    assert cluster.replica_status(4)[0]["SQL_Delay"] == "30"


async def test_a_hub_switchover_whose_candidate_cannot_catch_up_is_undone(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """A session on server 5 holds a lock on a table master 1 writes to, so server 5 cannot apply up to the hub's
    position in time: the switchover is undone — the hub's connections run again and server 5 replicates from it
    as before."""
    cluster = mariadb_factory(5, shape="seed000")
    cluster.sql(1, "CREATE TABLE app.behind (id INT PRIMARY KEY);")
    cluster.wait_converged()
    lock = pymysql.connect(unix_socket=cluster.server(5).socket, user="root", autocommit=True)
    try:
        with lock.cursor() as c:
            c.execute("LOCK TABLES app.behind READ")
        cluster.sql(1, "INSERT INTO app.behind VALUES (1);")
        async with live_app(switchover_catch_up_timeout_s=2.0) as live:
            cluster_id, ids = await register_mariadb(live.client, cluster)
            operation = await run_operation(live.app, live.client, cluster_id, "switchover",
                                            {"candidate_registered_server_id": ids[5]})  # fmt: skip
    finally:
        lock.close()
    assert operation["state"] == "undone", (operation["error"], operation["steps"])
    assert "did not reach" in operation["error"]
    assert operation["result"]["failure"] == UNDONE, operation["result"]
    assert connections(cluster, 3) == {"m1": (1, "Yes", "Yes"), "m2": (2, "Yes", "Yes")}
    assert connections(cluster, 5) == {"": (3, "Yes", "Yes")}
    cluster.wait_converged()
    assert cluster.sql(5, "SELECT id FROM app.behind") == [["1"]]


#: The hub switchover's moves, each a point the API is killed after; after these it is undone, after the others
#: (the candidate had begun to replicate from the hub's masters) completed.
HUB_STEPS = ["hub_stops_receiving", "candidate_catch_up", "candidate_takes_connections", "repoint_replicas",
             "hub_replicates"]  # fmt: skip
HUB_UNDONE_AFTER = {"hub_stops_receiving", "candidate_catch_up"}


def hub_of(cluster: MariadbCluster) -> int | None:
    """The server below the masters that replicates m1 and m2 with the other two under it, if there is one."""
    for hub in (3, 4, 5):
        try:
            assert_hub(cluster, hub)
        except AssertionError:
            continue
        return hub
    return None


@pytest.mark.long
async def test_killing_the_api_at_each_step_of_a_hub_switchover_leaves_one_hub(
    fault_database: str, mariadb_factory: Callable[..., MariadbCluster], tmp_path: Path
) -> None:
    """The API SIGKILLed after each move in turn, then started again: its reconciler undoes the switchover (before
    the candidate took the hub's connections) or completes it (after), and the two-master shape stands, with one
    hub, under writes in both domains."""
    cluster = mariadb_factory(5, shape="seed000")
    settings = app_settings(fault_database)
    headers = {"Authorization": f"Bearer {await operator_token(settings)}"}
    api = ApiProcess(settings, tmp_path / "api.log")
    writer = await MariadbLoadWriter(cluster, clients=2, domains=2, rate=100.0, masters={1: 1, 2: 2}).start()
    try:
        base = await api.start()
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=WAIT_S) as client:
            cluster_id, ids = await register_mariadb(client, cluster)
        api.stop()
        for point in HUB_STEPS:
            hub = hub_of(cluster)
            assert hub is not None, point
            candidate = 5 if hub != 5 else 3
            operation, client = await killed_after(api, headers, point,
                                                   f"/api/v1/clusters/{cluster_id}/operations/switchover",
                                                   {"candidate_registered_server_id": ids[candidate]})  # fmt: skip
            await client.aclose()
            api.stop()
            assert operation["state"] == "interrupted", (point, operation)
            report = operation["result"]["reconciled"]
            assert report["problems"] == [], (point, report)
            said = "undone:" if point in HUB_UNDONE_AFTER else "completed:"
            assert any(line.startswith(said) for line in report["done"]), (point, report)
            expected = hub if point in HUB_UNDONE_AFTER else candidate
            await eventually(f"server {expected} the hub after the reconcile of {point}",
                             lambda e=expected: hub_of(cluster) == e)  # fmt: skip
    finally:
        ledger = await writer.stop()
        api.stop()
    assert ledger.refused == 0 and not ledger.unknown
    cluster.wait_converged()
    for number in range(1, 6):
        rows = load_rows(cluster, number)
        for key, acked in ledger.acked.items():
            if number in HOLDERS[int(key[1])]:
                assert rows[key] == acked, (number, key, rows[key], acked)


async def test_ferryctl_switches_an_intermediate_master_named_with_from(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster], tmp_path: Path
) -> None:
    """`ferryctl switchover seed000 --from s3 --to s5 --wait` moves the hub, its dry run prints the plan per domain;
    `--from` naming a server nothing replicates from is refused by the preflight, naming why."""
    cluster = mariadb_factory(5, shape="seed000")
    seed000_tables(cluster)
    async with live_app() as live:
        await register_mariadb(live.client, cluster, name="seed000")
        async with serve(live.app) as url:
            run = await ferryctl(tmp_path, "switchover", "seed000", "--from", "s4", "--to", "s5", "--wait",
                                 url=url, token=live.tokens.operator)  # fmt: skip
            assert run.code == ExitCode.refused, (run.out, run.err)
            assert "is not a source: no registered server replicates from it" in run.err, run.err
            dry = await ferryctl(tmp_path, "switchover", "seed000", "--from", "s3", "--to", "s5", "--dry-run",
                                 "--wait", url=url, token=live.tokens.operator)  # fmt: skip
            assert dry.code == 0, (dry.out, dry.err)
            assert "plan: s5 (server_id 5) replaces s3 (server_id 3)" in dry.out, dry.out
            assert "'m1' from s1 (server_id 1)" in dry.out and "'m2' from s2 (server_id 2)" in dry.out, dry.out
            assert "domain 1" in dry.out
            assert_hub(cluster, 3)  # the dry run moved nothing
            run = await ferryctl(tmp_path, "switchover", "seed000", "--from", "s3", "--to", "s5", "--wait",
                                 "-o", "json", url=url, token=live.tokens.operator)  # fmt: skip
            assert run.code == 0, (run.out, run.err)
            assert run.json()["state"] == "succeeded"
    assert_hub(cluster, 5)


async def test_a_drill_of_the_hub_moves_it_and_back_with_canaries_in_every_domain(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """A drill naming the hub as its source: a canary on master 1 in domain 1 and on master 2 in domain 2, the hub's
    role to server 5 and back, the canaries verified on every server below the masters each time, the run
    passing with each move's replication gaps; the hub is server 3 again."""
    cluster = mariadb_factory(5, shape="seed000")
    seed000_tables(cluster, rows=True)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        response = await live.client.post(f"/api/v1/clusters/{cluster_id}/drills/runs", json={
            "candidate_strategy": "fixed", "candidate_registered_server_id": ids[5],
            "source_registered_server_id": ids[3],
            "switch_back": True})  # fmt: skip
        assert response.status_code == 202, response.text
        run_id = response.json()["id"]
        operation = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{run_id}")).json()
    assert (run["state"], run["passed"], run["reasons"]) == ("passed", True, [])
    canaries = step(operation, "write_canaries")["detail"]
    assert set(canaries) == {"1", "2"} and canaries["1"].startswith("1-1-") and canaries["2"].startswith("2-2-")
    verified = [s for s in operation["steps"] if s["name"] == "verify_canaries"]
    assert len(verified) == 2 and all(s["detail"]["missing"] == [] for s in verified), verified
    assert set(run["details"]["switchover"]["replication_gaps_s"]) == {f"s{n} (server_id {n})" for n in (3, 4, 5)}
    assert "replication_gaps_s" in run["details"]["switch_back"]
    assert_hub(cluster, 3)
