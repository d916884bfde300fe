"""Failover against real ferryd clusters: automatic failover on SIGKILL of the master under load with semi-sync
(`ferry-bench commit --ledger` following the master, the replicas read-only as deployed; detected within the
configured time, the most advanced replica wins, all converge, no acknowledged transaction lost, the restarted old
master stays fenced, automatic failover suspended until acknowledged); no failover when only the control plane lost
the master; a manual failover that levels the best replica from its peer when none is ahead in every domain; and a
refusal while the master answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from ferry_control.models import ServerKind
from ferry_control.schemas.operation_results import LostDomain
from ferry_control.services.orchestrator.failover import lost_report
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.snapshot import ServerInfo, ServerView
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.ferryd_cluster import FerrydCluster, FerrydNode
from tests.helpers import (
    LOAD_FIELD,
    LOAD_TABLE,
    WAIT_S,
    LoadWriter,
    finished,
    register,
    run_operation,
    step,
    topology,
    writable_master,
)
from tests.waiting import eventually

#: On every node, so the promoted one keeps the guarantee (a replica's apply never waits for semi-sync: only its
#: own clients' commits do).
SEMI_SYNC = ("--durability", "local+network", "--semi-sync-replicas", "1", "--semi-sync-timeout-ms", "60000")
POLL_INTERVAL_S = 0.2
DETECTION_POLLS = 3


async def observed(client: httpx.AsyncClient, cluster_id: int, server_id: int, what: str,
                   condition: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:  # fmt: skip
    """Waits until the control plane's record of a server (what the collector last observed) satisfies
    `condition`; returns that record."""

    async def record() -> dict[str, Any] | None:
        response = await client.get(f"/api/v1/clusters/{cluster_id}/servers/{server_id}")
        assert response.status_code == 200, response.text
        server: dict[str, Any] = response.json()
        return server if condition(server) else None

    return await eventually(f"the control plane to observe {what}", record, WAIT_S)


def domains_of(text: str | None) -> set[int]:
    return {int(g.split("-")[0]) for g in (text or "").split(",") if g}


def until_reached_both(first: FerrydNode, second: FerrydNode) -> Callable[[], bool]:
    return lambda: all(n.status()["replication"][0]["sql_state"] == "until_reached" for n in (first, second))


def test_the_lost_report_warns_when_the_old_master_sent_before_its_binlog_was_durable() -> None:
    def old_master(replicas_may_be_ahead: bool | None) -> ServerView:
        info = ServerInfo(
            id=1, name="m", kind=ServerKind.ferry, host="127.0.0.1", protocol_port=7301, admin_address=None,
            maintenance=False, fenced=False, last_binlog_pos="1-1-10", last_seen_at=datetime(2026, 1, 1, tzinfo=UTC),
            replicas_may_be_ahead=replicas_may_be_ahead,
        )  # fmt: skip
        return ServerView(info=info, driver=None, status=None, error="does not answer")

    now = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    unsynced = lost_report(old_master(True), position("1-1-8"), now=now)
    assert unsynced.old_master_replicas_may_be_ahead is True
    assert unsynced.domains == [
        LostDomain(domain=1, old_master_last_seen="1-1-10", new_master="1-1-8", transactions_possibly_lost=2)
    ]
    assert "before they were durable in its binlog" in unsynced.note
    assert "never serve as a master again" in unsynced.note
    for durable in (False, None):
        report = lost_report(old_master(durable), position("1-1-8"), now=now)
        assert report.old_master_replicas_may_be_ahead is durable
        assert "before they were durable" not in report.note


async def test_automatic_failover_on_sigkill_under_load_with_semi_sync(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(extra_args=SEMI_SYNC, read_only_replicas=True)
    old, best, lagging = ferryd.master, ferryd.replica1, ferryd.replica2
    async with live_app(
        collector_enabled=True,
        poll_interval_s=POLL_INTERVAL_S,
        poll_timeout_s=1.0,
        failover_detection_polls=DETECTION_POLLS,
        unreachable_after_failures=DETECTION_POLLS,
    ) as live:
        cluster_id, ids = await register(live.client, ferryd, auto_failover=True)
        writer = await LoadWriter.start(ferryd.nodes, clients=8, domains=4)
        try:
            await eventually(
                "writes in 4 domains",
                lambda: len(old.status()["gtid_binlog_pos"].split(",")) == 4,
                WAIT_S,
                in_thread=True,
            )
            lagging.post("/v1/replication/main/stop", {})  # so exactly one replica is the most advanced
            await eventually(
                "lag",
                lambda: old.status()["gtid_binlog_pos"] != lagging.status()["gtid_binlog_pos"],
                WAIT_S,
                in_thread=True,
            )
            # The collector's first poll of the master may come after any fixed moment: kill it only once the
            # control plane has observed it writing in every domain (what the failover report is built from).
            seen = await observed(
                live.client, cluster_id, ids["master"], "the master writing in 4 domains",
                lambda s: s["health"] == "healthy" and len(domains_of(s["gtid_binlog_pos"])) == 4,
            )  # fmt: skip
            killed_at = datetime.now(UTC)
            old.kill()
            operation_id = None
            async with asyncio.timeout(WAIT_S):
                while operation_id is None:
                    listed = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
                    operation_id = next((o["id"] for o in listed if o["type"] == "failover"), None)
                    await asyncio.sleep(0.05)
            operation = await finished(live.app, live.client, cluster_id, operation_id)
            assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
            # Detected by failed polls, not by time: the monitor acted once the master had failed DETECTION_POLLS
            # polls in a row (how fast that is, is the failover benchmark's business).
            assert datetime.fromisoformat(operation["created_at"]) > killed_at
            assert "does not answer" in step(operation, "confirm_master_lost")["detail"], operation["steps"]
            master_now = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}")).json()
            assert master_now["consecutive_failures"] >= DETECTION_POLLS, master_now
            assert operation["requester"] == "failover-monitor" and operation["params"]["automatic"] is True
            result = operation["result"]
            assert result["old_master_registered_server_id"] == ids["master"]
            assert result["new_master_registered_server_id"] == ids["replica1"], step(operation, "choose_candidate")
            assert result["witnesses"] == ["replica1 (server_id 2)"]
            assert step(operation, "bring_level")["state"] == "skipped"
            lost = result["possibly_lost"]
            assert domains_of(lost["old_master_last_seen_position"]) == {1, 2, 3, 4}, lost
            assert datetime.fromisoformat(lost["old_master_last_seen_at"]) >= datetime.fromisoformat(
                seen["last_seen_at"]
            )
            assert lost["old_master_last_seen_age_s"] > 0, lost
            # Durability local+network: the old master's binlog was durable before its replicas got it.
            assert lost["old_master_replicas_may_be_ahead"] is False and "before they were durable" not in lost["note"]
            summary = await writer.stop()
        finally:
            writer.kill()

        assert writable_master([best, lagging]) is best
        target = best.status()["gtid_binlog_pos"]
        lagging.wait_for(target)
        # Semi-sync held on the replicas without ever waiting, and holds on the new master: its commits wait for
        # the one replica left, and none timed out.
        assert lagging.status()["semi_sync"]["timeouts"] == 0
        semi_sync = best.status()["semi_sync"]
        assert (semi_sync["state"], semi_sync["timeouts"]) == ("on", 0), semi_sync
        best.increment(key="after-failover")
        assert best.status()["semi_sync"]["waits"] > semi_sync["waits"]
        assert topology([lagging])[lagging.server_id][1] == [("main", best.listen, True)]
        assert best.get("/v1/checksums") == lagging.get("/v1/checksums")
        async with await FerryProtocolClient.connect(best.listen) as connection:
            for key, acked in summary["acked"].items():
                row = await connection.get(LOAD_TABLE, key)
                value = 0 if row is None else row[LOAD_FIELD]
                assert acked <= value <= acked + summary["unknown"].get(key, 0), (key, acked, value, summary["unknown"])

        cluster = (await live.client.get(f"/api/v1/clusters/{cluster_id}")).json()
        assert cluster["failover_suspended_at"] and cluster["last_failover_operation_id"] == operation_id

        # The old master comes back writable (as ferryd starts): the monitor fences it, and nobody repoints it.
        old.start(same_ports=True)
        await eventually("the old master fenced", lambda: old.status()["read_only"], WAIT_S, in_thread=True)
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}")).json()
        assert server["fenced"] and "failover operation" in server["fence_reason"]
        assert old.status()["replication"] == []

        acknowledged = await live.client.post(f"/api/v1/clusters/{cluster_id}/failover/acknowledge")
        assert acknowledged.status_code == 200 and acknowledged.json()["failover_suspended_at"] is None
        again = await live.client.post(f"/api/v1/clusters/{cluster_id}/failover/acknowledge")
        assert again.status_code == 409 and again.json()["error"]["code"] == "nothing_to_acknowledge"


async def test_no_failover_when_only_the_control_plane_lost_the_master(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app(failover_detection_polls=2, unreachable_after_failures=2) as live:
        cluster_id, ids = await register(live.client, ferryd, auto_failover=True)
        collector, monitor = live.app.state.collector, live.app.state.monitor
        await collector.run_cycle()
        # The control plane loses the master (a wrong admin port: an admin's change), the replicas do not.
        async with live.client_as("admin") as admin:
            response = await admin.patch(
                f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}", json={"admin_port": 1}
            )
        assert response.status_code == 200
        for _ in range(3):
            await collector.run_cycle()
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}")).json()
        assert server["health"] == "unreachable" and server["consecutive_failures"] >= 2
        async with live.app.state.bus.subscribe(cluster_id) as events:
            assert await monitor.check() == []
            event = await asyncio.wait_for(events.next(), WAIT_S)
        assert event.type == "failover_not_confirmed" and "still replicate" in event.data.detail
        assert (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json() == []
        assert writable_master(ferryd.nodes) is ferryd.master


async def test_manual_failover_levels_the_best_replica_from_its_peer(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """replica1 has the newest of domain 1, replica2 the newest of domain 2: neither is ahead in every domain, so
    the chosen one gets the other's domain by START … UNTIL before it is promoted."""
    ferryd = ferryd_factory()
    old, first, second = ferryd.master, ferryd.replica1, ferryd.replica2
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        refused = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert refused["state"] == "failed" and "answers and reports no failure" in refused["error"]
        assert refused["result"]["failure"] == REFUSED, refused["result"]

        for node in (first, second):
            node.post("/v1/replication/main/stop", {})
        position = ferryd.write(3, domains=(1, 2))
        newest = dict(g.split("-", 1) for g in position.split(","))
        first.post("/v1/replication/main/start", {"until": f"1-{newest['1']}"})
        second.post("/v1/replication/main/start", {"until": f"2-{newest['2']}"})
        await eventually("both replicas at their UNTIL", until_reached_both(first, second), WAIT_S, in_thread=True)
        await live.app.state.collector.run_cycle()  # the lost report uses the last poll of the old master
        old.kill()
        started = time.monotonic()
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert time.monotonic() - started < WAIT_S
        assert step(operation, "bring_level")["state"] == "passed"
        new_id = operation["result"]["new_master_registered_server_id"]
        new, other = (first, second) if new_id == ids["replica1"] else (second, first)
        assert new.status()["gtid_current_pos"] == position
        other.wait_for(position)
        assert topology([other])[other.server_id][1] == [("main", new.listen, True)]
        assert new.get("/v1/checksums") == other.get("/v1/checksums")
        assert operation["result"]["possibly_lost"]["domains"] == []
        listed = {o["type"] for o in (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()}
        assert listed == {"failover"}


async def test_last_observation_of_a_killed_server_survives_failed_polls_and_reaches_the_failover_report(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """The collector's last successful observation of a server (positions per domain, read-only flag, time) is
    what the API keeps showing however many polls fail after it, and what a failover reports, with its age."""
    ferryd = ferryd_factory()
    old = ferryd.master
    written = ferryd.write(3, domains=(1, 2))
    ferryd.converge()
    async with live_app(unreachable_after_failures=2) as live:
        cluster_id, ids = await register(live.client, ferryd)
        collector = live.app.state.collector
        for _ in range(3):
            assert (await collector.run_cycle()).failed == 0
        path = f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}"
        before = (await live.client.get(path)).json()
        assert before["health"] == "healthy" and before["gtid_binlog_pos"] == written, before
        assert before["read_only"] is False and before["last_seen_at"] is not None

        old.kill()
        for _ in range(10):
            await collector.run_cycle()
        after = (await live.client.get(path)).json()
        assert (after["health"], after["consecutive_failures"]) == ("unreachable", 10), after
        assert after["last_error"], after
        kept = ("gtid_binlog_pos", "gtid_current_pos", "read_only", "last_seen_at")
        assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
        matrix = (await live.client.get(f"/api/v1/clusters/{cluster_id}/positions")).json()
        row = next(r for r in matrix["rows"] if r["registered_server_id"] == ids["master"])
        assert row["last_seen_at"] == before["last_seen_at"] and row["health"] == "unreachable"
        assert {d: c["gtid"] for d, c in row["cells"].items()} == {
            str(int(g.split("-")[0])): g for g in written.split(",")
        }

        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        lost = operation["result"]["possibly_lost"]
        assert lost["old_master_last_seen_position"] == written
        assert datetime.fromisoformat(lost["old_master_last_seen_at"]) == datetime.fromisoformat(before["last_seen_at"])
        age_at_report = datetime.fromisoformat(step(operation, "lost_report")["finished_at"]) - datetime.fromisoformat(
            before["last_seen_at"]
        )
        # The age is rounded to the millisecond.
        assert 0 < lost["old_master_last_seen_age_s"] <= round(age_at_report.total_seconds(), 3) + 0.001, lost
        assert lost["domains"] == [], lost  # every replica had everything the old master was seen with
