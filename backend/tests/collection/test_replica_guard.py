"""The replica guard on real servers (services/replica_guard.py), the collector running: a replica made writable by
hand is read-only again within two poll intervals, with an audit row and a `replica_guard` event, on ferryd and on
mariadbd; with the cluster's `enforce_read_only_replicas` off it is only flagged (a standing problem and an event);
a server in maintenance is left alone. A replica given errant writes in two domains shows a standing problem naming
the domains, counts and GTIDs in the overview API and `ferryctl status`, and an admin can make a replicating server
writable for its own domains."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ferry_control.schemas.events import EventType
from ferry_control.services.event_bus import ClusterEvent, Subscription
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import Live, LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import WAIT_S, register, serve, whole_cycles
from tests.mariadb_cluster import MariadbCluster
from tests.mariadb_load import register_mariadb
from tests.waiting import eventually

POLL_S = 0.5


async def guard_event(subscription: Subscription, server_id: int, action: str) -> ClusterEvent:
    """The next `replica_guard` event of `server_id` with `action` (others are passed over)."""

    async def next_one() -> ClusterEvent:
        while True:
            event = await subscription.next()
            fields = event.data.fields()
            if (
                event.type == EventType.replica_guard
                and fields["registered_server_id"] == server_id
                and fields["action"] == action
            ):
                return event

    try:
        return await asyncio.wait_for(next_one(), WAIT_S)
    except TimeoutError:
        raise AssertionError(f"no replica_guard event {action!r} for server {server_id} within {WAIT_S} s") from None


async def overview(client: httpx.AsyncClient, cluster_id: int) -> dict[str, Any]:
    listed = (await client.get("/api/v1/clusters/overview")).json()
    return next(c for c in listed if c["id"] == cluster_id)


async def audit_rows(client: httpx.AsyncClient, cluster_id: int, action: str) -> list[dict[str, Any]]:
    rows = (await client.get("/api/v1/audit", params={"cluster_id": cluster_id})).json()
    return [row for row in rows if row["action"] == action]


async def test_a_ferryd_replica_made_writable_is_read_only_again_flagged_when_off_and_left_in_maintenance(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app(collector_enabled=True, poll_interval_s=POLL_S) as live, live.client_as("admin") as admin:
        cluster_id, ids = await register(admin, ferryd, name="guarded")
        await eventually("the replicas polled read-only", lambda: _all_read_only(live, cluster_id))

        async with live.app.state.bus.subscribe(cluster_id) as events:
            ferryd.replica1.post("/v1/read-only", {"read_only": False})
            event = await guard_event(events, ids["replica1"], "enforced")
        assert ferryd.replica1.status()["read_only"] is True
        assert (
            "replica1 (server_id 2) replicates master (server_id 1) and was writable" in event.data.fields()["detail"]
        )
        rows = await audit_rows(live.client, cluster_id, "read_only_enforced")
        assert [(r["actor"], r["outcome"], r["details"]["server"]) for r in rows] == [
            (None, "succeeded", "replica1 (server_id 2)")
        ]

        # Off: only flagged, as a standing problem, for as long as it lasts.
        response = await admin.patch(f"/api/v1/clusters/{cluster_id}", json={"enforce_read_only_replicas": False})
        assert response.status_code == 200 and response.json()["enforce_read_only_replicas"] is False, response.text
        async with live.app.state.bus.subscribe(cluster_id) as events:
            ferryd.replica2.post("/v1/read-only", {"read_only": False})
            await guard_event(events, ids["replica2"], "flagged")
        problem = "replica2 (server_id 3) replicates master (server_id 1) and is writable"
        await eventually("the writable replica as a problem", lambda: _has_problem(live, cluster_id, problem))
        await whole_cycles(live, 3)
        assert ferryd.replica2.status()["read_only"] is False
        summary = await overview(live.client, cluster_id)
        assert summary["health"] == "degraded"
        assert any("enforce_read_only_replicas is off" in p for p in summary["problems"] if problem in p)

        # On again, but the server in maintenance: left alone, and said so.
        response = await live.client.put(
            f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}/maintenance",
            json={"maintenance": True, "reason": "testing the guard", "duration_s": 600},
        )
        assert response.status_code == 200, response.text
        response = await live.client.patch(f"/api/v1/clusters/{cluster_id}", json={"enforce_read_only_replicas": True})
        assert response.status_code == 200, response.text
        await whole_cycles(live, 3)
        assert ferryd.replica2.status()["read_only"] is False
        summary = await overview(live.client, cluster_id)
        assert any(problem in p and "in maintenance" in p for p in summary["problems"]), summary["problems"]

        # Out of maintenance: enforced.
        async with live.app.state.bus.subscribe(cluster_id) as events:
            response = await live.client.put(
                f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}/maintenance", json={"maintenance": False}
            )
            assert response.status_code == 200, response.text
            await guard_event(events, ids["replica2"], "enforced")
        assert ferryd.replica2.status()["read_only"] is True
        assert len(await audit_rows(live.client, cluster_id, "read_only_enforced")) == 2


async def test_a_mariadb_replica_made_writable_is_read_only_again_within_two_poll_intervals(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    cluster = mariadb_factory(3)
    async with (
        live_app(collector_enabled=True, poll_interval_s=POLL_S, poll_timeout_s=2.0) as live,
        live.client_as("admin") as admin,
    ):
        cluster_id, ids = await register_mariadb(admin, cluster)
        await eventually("the replicas polled read-only", lambda: _all_read_only(live, cluster_id))
        async with live.app.state.bus.subscribe(cluster_id) as events:
            cluster.sql(2, "SET GLOBAL read_only = 0")
            event = await guard_event(events, ids[2], "enforced")
        assert cluster.value(2, "@@read_only") == "1"
        assert "s2 (server_id 2) replicates s1 (server_id 1) and was writable" in event.data.fields()["detail"]
        rows = await audit_rows(live.client, cluster_id, "read_only_enforced")
        assert [(r["outcome"], r["details"]["server"]) for r in rows] == [("succeeded", "s2 (server_id 2)")]

        # Off (an admin's call): flagged, left writable.
        response = await admin.patch(f"/api/v1/clusters/{cluster_id}", json={"enforce_read_only_replicas": False})
        assert response.status_code == 200, response.text
        async with live.app.state.bus.subscribe(cluster_id) as events:
            cluster.sql(3, "SET GLOBAL read_only = 0")
            await guard_event(events, ids[3], "flagged")
        await whole_cycles(live, 3)
        assert cluster.value(3, "@@read_only") == "0"
        problem = "s3 (server_id 3) replicates s1 (server_id 1) and is writable"
        assert any(problem in p for p in (await overview(live.client, cluster_id))["problems"])


async def test_errant_writes_in_two_domains_are_named_in_the_overview_and_ferryctl_status(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app(collector_enabled=True, poll_interval_s=POLL_S) as live, live.client_as("admin") as admin:
        cluster_id, ids = await register(admin, ferryd, name="split", enforce_read_only_replicas=False)
        await eventually("the replicas polled read-only", lambda: _all_read_only(live, cluster_id))
        replica = ferryd.replica1
        replica.post("/v1/read-only", {"read_only": False})
        mine = {1: [replica.increment("e1", "k", domain=1) for _ in range(3)],
                2: [replica.increment("e2", "k", domain=2) for _ in range(2)]}  # fmt: skip

        async def errant_known() -> list[dict[str, Any]] | None:
            nodes = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["nodes"]
            errant = next(n for n in nodes if n["registered_server_id"] == ids["replica1"])["errant"]
            return errant if [(e["domain"], e["last_gtid"]) for e in errant] == [(1, mine[1][-1]),
                                                                                (2, mine[2][-1])] else None  # fmt: skip

        errant = await eventually("replica1's errant transactions in domains 1 and 2", errant_known)
        assert [(e["first_gtid"], e["transactions"]) for e in errant] == [(mine[1][0], 3), (mine[2][0], 2)]

        summary = await overview(live.client, cluster_id)
        words = next(p for p in summary["problems"] if "errant" in p)
        assert words.startswith(
            "replica1 (server_id 2) took 5 writes of its own while replicating master (server_id 1)"
        ), words
        assert f"3 in domain 1 ({mine[1][0]} … {mine[1][-1]}) since " in words
        assert f"2 in domain 2 ({mine[2][0]} … {mine[2][-1]}) since " in words

        metrics = (await live.client.get("/metrics")).text
        assert 'ferry_control_server_errant_transactions{cluster="split",domain="1",server="replica1"} 3.0' in metrics
        assert 'ferry_control_replica_writable{cluster="split",server="replica1"} 1.0' in metrics

        async with serve(live.app) as url:
            run = await ferryctl(tmp_path, "status", "split", "--output", "json", url=url, token=live.tokens.viewer)
            assert run.code == 0, run.err
            status = run.json()
            assert [(r["server"], r["domain"], r["transactions"], r["first_gtid"], r["last_gtid"])
                    for r in status["errant"]] == [
                ("replica1", 1, 3, mine[1][0], mine[1][-1]), ("replica1", 2, 2, mine[2][0], mine[2][-1])
            ]  # fmt: skip
            assert any(p == words for p in status["problems"]), status["problems"]
            text = await ferryctl(tmp_path, "--url", url, "--token", live.tokens.viewer, "status", "split")
            assert text.code == 0, text.err
            assert "took 5 writes of its own" in " ".join(text.out.split()), text.out
            assert mine[2][-1] in text.out

        # The master then writes domain 1: the replica's strict mode refuses it, and the stop is told in words.
        ferryd.write(1, domains=(1,))

        async def stopped_in_words() -> str | None:
            edges = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["edges"]
            edge = next(e for e in edges if e["replica_registered_server_id"] == ids["replica1"])
            return edge["last_error_words"]

        stop = await eventually("replica1's strict-mode stop in words", stopped_in_words)
        assert "replica1 (server_id 2) took writes of its own in domains 1, 2" in stop, stop
        assert "rebuild replica1 (server_id 2) from master (server_id 1)" in stop, stop

        # An admin makes it writable for domain 2: its own transactions there are not errant, those in 1 still are.
        path = f"/api/v1/clusters/{cluster_id}/servers/{ids['replica1']}/writable-domains"
        assert (await live.client.put(path, json={"domains": [2]})).status_code == 403
        for bad in ({"domains": [2, 2]}, {"domains": [-1]}, {"domains": "2"}, {}):
            assert (await admin.put(path, json=bad)).status_code == 422, bad
        missing = f"/api/v1/clusters/{cluster_id}/servers/999999/writable-domains"
        assert (await admin.put(missing, json={"domains": [2]})).status_code == 404
        response = await admin.put(path, json={"domains": [2]})
        assert response.status_code == 200 and response.json()["writable_domains"] == [2], response.text
        assert response.json()["set_by"] == "live-admin"
        await eventually("only domain 1 errant", lambda: _errant_domains(live, cluster_id, ids["replica1"], [1]))


async def _all_read_only(live: Live, cluster_id: int) -> bool:
    nodes = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["nodes"]
    replicas = [n for n in nodes if n["role"] == "replica"]
    return len(replicas) == 2 and all(n["read_only"] is True for n in replicas)


async def _has_problem(live: Live, cluster_id: int, words: str) -> bool:
    return any(words in p for p in (await overview(live.client, cluster_id))["problems"])


async def _errant_domains(live: Live, cluster_id: int, server_id: int, domains: list[int]) -> bool:
    nodes = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()["nodes"]
    return [e["domain"] for e in next(n for n in nodes if n["registered_server_id"] == server_id)["errant"]] == domains
