"""Rejoin against real ferryd clusters: the master SIGKILLed under a two-domain writer, a failover, the old master
started again — it rejoins as a read-only replica of the new master (its connection, current_pos), no longer fenced,
and nothing acknowledged is lost or applied twice; an old master holding transactions the new master never had
(written while its replicas were stopped) is not rejoined: nothing is changed, and they are listed per domain with
their count, first and last GTID and tables; with the cluster's auto_rejoin, a fenced master that answers again
rejoins by itself (the failover monitor starts the rejoin); a rejoin refused (a server that replicates already)
records a refusal, one whose source sends nothing (its stream blackholed) records what it left changed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from ferry_control.ctl.errors import ExitCode
from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.fault_proxy import FaultProxy, Mode
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import LOAD_FIELD, LOAD_TABLE, WAIT_S, LoadWriter, finished, register, run_operation, serve, topology
from tests.operations.test_failover_faults import through
from tests.waiting import eventually


async def fenced(live: object, cluster_id: int, server_id: int) -> bool:
    response = await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{server_id}")  # type: ignore[attr-defined]
    assert response.status_code == 200, response.text
    return bool(response.json()["fenced"])


async def test_a_failed_over_master_rejoins_as_a_replica_and_nothing_is_lost(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    old = ferryd.master
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        writer = await LoadWriter.start(ferryd.nodes, clients=4, domains=2)
        try:
            await eventually(
                "writes in 2 domains", lambda: len(old.status()["gtid_binlog_pos"].split(",")) == 2, WAIT_S,
                in_thread=True,
            )  # fmt: skip
            # Killed with nothing in flight and everything replicated (without semi-sync, what it acknowledged last
            # could be its alone: the second test is that case).
            await writer.pause()
            ferryd.converge()
            await live.app.state.collector.run_cycle()
            old.kill()
            failover = await run_operation(live.app, live.client, cluster_id, "failover", {})
            assert failover["state"] == "succeeded", (failover["error"], failover["steps"])
            new_id = failover["result"]["new_master_registered_server_id"]
            new = ferryd.replica1 if new_id == ids["replica1"] else ferryd.replica2
            assert await fenced(live, cluster_id, ids["master"])
            # Writes go on on the new master; they stop while the old one starts again: it starts writable (nothing
            # recorded it read-only), and a client following the master must not find it before it rejoins.
            await writer.resume()
            moved = new.status()["gtid_binlog_pos"]
            await eventually(
                "writes on the new master", lambda: new.status()["gtid_binlog_pos"] != moved, WAIT_S, in_thread=True
            )
            await writer.pause()
            old.start(same_ports=True)
            dry = await run_operation(live.app, live.client, cluster_id, "rejoin",
                                      {"registered_server_id": ids["master"], "dry_run": True})  # fmt: skip
            assert dry["state"] == "succeeded", dry
            assert topology([old])[old.server_id][1] == [], "a dry run changes nothing"
            rejoin = await run_operation(
                live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["master"]}
            )
            assert rejoin["state"] == "succeeded", (rejoin["error"], rejoin["steps"])
            assert [s["name"] for s in rejoin["steps"]] == [
                "preflight", "pre_hooks", "read_only", "replicate", "verify", "unfence",
            ]  # fmt: skip
            assert rejoin["result"]["master_registered_server_id"] == new_id and rejoin["result"]["only_here"] == []
            assert not await fenced(live, cluster_id, ids["master"])
            status = old.status()
            assert status["read_only"] is True
            assert [(c["name"], c["master"], c["running"]) for c in status["replication"]] == [
                ("main", new.listen, True)
            ]
            await writer.resume()
            moved = new.status()["gtid_binlog_pos"]
            await eventually(
                "writes after the rejoin", lambda: new.status()["gtid_binlog_pos"] != moved, WAIT_S, in_thread=True
            )
            summary = await writer.stop()
        finally:
            writer.kill()
    position = new.status()["gtid_binlog_pos"]
    for node in ferryd.nodes:
        node.wait_for(position)
    sums = [node.get("/v1/checksums")["tables"] for node in ferryd.nodes]
    assert sums[0] == sums[1] == sums[2], sums
    # Every acknowledged increment is there exactly once (the old master's included: it applied the new master's).
    async with await FerryProtocolClient.connect(old.listen) as connection:
        for key, acked in summary["acked"].items():
            row = await connection.get(LOAD_TABLE, key)
            value = 0 if row is None else row[LOAD_FIELD]
            assert acked <= value <= acked + summary["unknown"].get(key, 0), (key, acked, value, summary["unknown"])


async def test_a_master_with_transactions_the_new_master_lacks_is_not_rejoined_and_they_are_listed(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    old = ferryd.master
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        # Acknowledged by the master, never replicated: what a failover's RPO pays without semi-sync.
        for replica in (ferryd.replica1, ferryd.replica2):
            replica.post("/v1/replication/main/stop", {})
        only_old = ferryd.write(3, domains=(1, 2))
        await live.app.state.collector.run_cycle()
        old.kill()
        failover = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert failover["state"] == "succeeded", (failover["error"], failover["steps"])
        old.start(same_ports=True)
        old.post("/v1/read-only", {"read_only": True})
        before = topology(ferryd.nodes)
        refused = await run_operation(
            live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["master"]}
        )
        assert refused["state"] == "failed", refused
        assert [s["name"] for s in refused["steps"]] == ["preflight"]
        error = refused["error"]
        assert refused["result"]["failure"] == REFUSED, refused["result"]
        assert "master (server_id 1) has transactions" in error, error
        newest = dict(g.split("-", 1) for g in only_old.split(","))
        only_here = {d["domain"]: d for d in refused["result"]["only_here"]}
        assert set(only_here) == {1, 2}, only_here
        for domain in (1, 2):
            d = only_here[domain]
            assert d["count"] == 3 and d["last"] == f"{domain}-{newest[str(domain)]}", d
            seq = int(newest[str(domain)].split("-")[1])
            assert d["first"] == f"{domain}-1-{seq - 2}", d
            assert [t["tables"] for t in d["transactions"]] == [[f"d{domain}"]] * 3, d
            assert f"domain {domain}: 3 transaction(s), {domain}-1-{seq - 2} … {domain}-{newest[str(domain)]}" in error
        assert topology(ferryd.nodes) == before, "nothing was changed"
        assert await fenced(live, cluster_id, ids["master"])


async def test_with_auto_rejoin_a_fenced_master_that_answers_again_rejoins_by_itself(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    old = ferryd.master
    ferryd.write(3, domains=(1, 2))
    ferryd.converge()
    async with live_app(collector_enabled=True, poll_interval_s=0.2, poll_timeout_s=1.0) as live:
        cluster_id, ids = await register(live.client, ferryd, auto_rejoin=True)
        assert (await live.client.get(f"/api/v1/clusters/{cluster_id}")).json()["auto_rejoin"] is True
        old.kill()
        failover = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert failover["state"] == "succeeded", (failover["error"], failover["steps"])
        new_id = failover["result"]["new_master_registered_server_id"]
        new = ferryd.replica1 if new_id == ids["replica1"] else ferryd.replica2
        new.increment("after", "k", domain=1)
        old.start(same_ports=True)  # writable, as a killed ferryd master starts: fenced, then rejoined

        async def rejoined() -> bool:
            return not await fenced(live, cluster_id, ids["master"])

        await eventually("the fenced old master rejoined by the monitor", rejoined, WAIT_S)
        listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
        rejoin = await finished(
            live.app, live.client, cluster_id, next(o["id"] for o in listed if o["type"] == "rejoin")
        )
        assert rejoin["state"] == "succeeded" and rejoin["requester"] == "failover-monitor", rejoin
        status = old.status()
        assert status["read_only"] is True
        assert [(c["name"], c["master"]) for c in status["replication"]] == [("main", new.listen)]
        old.wait_for(new.status()["gtid_binlog_pos"])
        assert old.get("/v1/checksums")["tables"] == new.get("/v1/checksums")["tables"]


async def test_ferryctl_rejoin_waits_for_it_and_a_dry_run_changes_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    old = ferryd.master
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        await register(live.client, ferryd, name="orders")
        old.kill()
        async with serve(live.app) as url:
            token = live.tokens.operator
            failover = await ferryctl(tmp_path, "failover", "orders", "--wait", url=url, token=token)
            assert failover.code == ExitCode.ok, (failover.out, failover.err)
            old.start(same_ports=True)
            old.post("/v1/read-only", {"read_only": True})
            dry = await ferryctl(tmp_path, "rejoin", "orders", "--server", "master", "--dry-run", "--wait",
                                 url=url, token=token)  # fmt: skip
            assert dry.code == ExitCode.ok, (dry.out, dry.err)
            assert "rejoin" in dry.out and "(dry run)" in dry.out, dry.out
            assert old.status()["replication"] == []
            viewer = await ferryctl(tmp_path, "rejoin", "orders", "--server", "master", url=url,
                                    token=live.tokens.viewer)  # fmt: skip
            assert viewer.code == ExitCode.auth, (viewer.out, viewer.err)
            run = await ferryctl(tmp_path, "rejoin", "orders", "--server", "master", "--wait", "-o", "json",
                                 url=url, token=token)  # fmt: skip
            assert run.code == ExitCode.ok, (run.out, run.err)
            operation = run.json()
            assert (operation["type"], operation["state"]) == ("rejoin", "succeeded"), operation
    assert [c["running"] for c in old.status()["replication"]] == [True]


async def test_a_rejoin_that_cannot_follow_its_source_says_what_it_left(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """replica2, read-only and cut loose (its connection removed), is a server to rejoin; its source's stream (a
    fault proxy in front of the master) sends nothing: the rejoin fails in its verification, changed — the server
    replicates from the source and does not follow it — and the typed failure says so. replica1, which replicates
    already, is refused: nothing changed."""
    ferryd = ferryd_factory(read_only_replicas=True)
    master, replica1, replica2 = ferryd.master, ferryd.replica1, ferryd.replica2
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    replica2.post("/v1/replication/main/stop", {})
    replica2.post("/v1/replication/main/reset", {"all": True})
    async with FaultProxy("127.0.0.1", master.protocol_port) as stream, live_app(verify_timeout_s=2.0) as live:
        await asyncio.to_thread(through, replica1, stream.address)
        cluster_id, ids = await register(live.client, ferryd)
        moved = await live.client.patch(
            f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}",
            json={"protocol_port": stream.port},
            headers=live.tokens.header("admin"),
        )
        assert moved.status_code == 200, moved.text

        refused = await run_operation(
            live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["replica1"]}
        )
        assert refused["state"] == "failed" and "replicates already" in refused["error"], refused
        assert refused["result"]["failure"] == REFUSED, refused["result"]

        stream.set(Mode.blackhole)
        rejoin = await run_operation(
            live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["replica2"]}
        )
        assert rejoin["state"] == "failed", rejoin
        assert [(s["name"], s["state"]) for s in rejoin["steps"]][-2:] == [("replicate", "passed"),
                                                                          ("verify", "failed")]  # fmt: skip
        failure = rejoin["result"]["failure"]
        assert (failure["kind"], failure["changed"], failure["compensation"]) == ("step_failed", True, None), failure
        label, source = f"replica2 (server_id {replica2.server_id})", f"master (server_id {master.server_id})"
        [left] = failure["left"]  # it was read-only before: only its connection is left
        assert left.startswith(
            f"{label} replicates from {source} over 'main', not following: not replicating from {stream.address}"
        ), left
        assert topology([replica2])[replica2.server_id] == (True, [("main", stream.address, True)])
