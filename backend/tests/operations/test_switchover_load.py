"""Switchover under load, twenty times back and forth: `ferry-bench commit --ledger` keeps 8 clients committing in 4
domains (1000 transactions/s in all) and follows the master (the replicas read-only, as deployed); after every
switchover the new master is writable, every other server replicates from it, and (with the writer paused) every
server converges to equal checksums. At the end every acknowledged increment is on every server — no acknowledged
transaction lost, none applied twice — and each window was recorded."""

from __future__ import annotations

import statistics
from collections.abc import Callable

import pytest

from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from ferry_control.services.orchestrator.gtid import position
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import LOAD_FIELD, LOAD_TABLE, LoadWriter, register, run_operation, writable_master

SWITCHOVERS = 20


@pytest.mark.long(rank=1)
async def test_twenty_switchovers_under_load_lose_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    nodes = ferryd.nodes
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        node_of = {ids["master"]: ferryd.master, ids["replica1"]: ferryd.replica1, ids["replica2"]: ferryd.replica2}
        writer = await LoadWriter.start(nodes, clients=8, domains=4)
        windows = []
        acked_before = 0
        try:
            for i in range(SWITCHOVERS):
                candidate_id = ids["replica1"] if i % 2 == 0 else ids["master"]
                operation = await run_operation(
                    live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": candidate_id}
                )
                assert operation["state"] == "succeeded", (i, operation["error"], operation["steps"])
                windows.append(operation["result"]["unavailable_s"])
                new_master = node_of[candidate_id]
                assert writable_master(nodes) is new_master
                for node in nodes:
                    if node is not new_master:
                        connections = node.status()["replication"]
                        assert [(c["master"], c["running"], c["io_state"]) for c in connections] == [
                            (new_master.listen, True, "connected")
                        ], (i, node.server_id, [(c["last_error"], c["sql_state"]) for c in connections])

                paused = await writer.pause()
                assert paused["acked"] > acked_before, f"no write went through around switchover {i}"
                acked_before = paused["acked"]
                target = new_master.status()["gtid_binlog_pos"]
                for node in nodes:
                    node.wait_for(target)
                checksums = [node.get("/v1/checksums") for node in nodes]
                assert all(c == checksums[0] for c in checksums), (i, checksums)
                assert set(position(target).domains()) >= {1, 2, 3, 4}
                await writer.resume()
        finally:
            summary = await writer.stop()

    assert summary["unknown"] == {}, "a switchover broke a client connection mid-transaction"
    assert summary["master_changes"] >= SWITCHOVERS
    acked_gtids = summary["acked_gtids"]
    assert len(acked_gtids) == len(set(acked_gtids)), "a GTID was acknowledged twice"
    for node in nodes:
        current = position(node.status()["gtid_current_pos"])
        for gtid in acked_gtids:
            domain, _, seq = (int(x) for x in gtid.split("-"))
            assert current.get(domain).seq >= seq, (node.server_id, gtid)
        async with await FerryProtocolClient.connect(node.listen) as connection:
            for key, acked in summary["acked"].items():
                row = await connection.get(LOAD_TABLE, key)
                assert row is not None and row[LOAD_FIELD] == acked, (node.server_id, key, row, acked)
    # Each window is measured and stored; how long it is, is the switchover benchmark's business
    # (backend/bench/switchover_window.py), not a test's.
    assert len(windows) == SWITCHOVERS and all(w > 0 for w in windows), windows
    print(f"switchover unavailability under load: median {statistics.median(windows):.3f} s, max {max(windows):.3f} s")
