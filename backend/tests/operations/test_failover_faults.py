"""Failover under faults of the network and of the master itself, against real ferryd nodes: a TCP fault proxy
between the control plane and the master (cut, delay, blackhole) triggers no failover while the replicas still see
the master, and a failover when they lose it too — the old master, alive all along, fenced when it answers again; a
master that answers but reports a failure (it cannot commit) is failed over on its own word and made read-only
before anything is promoted."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from tests.conftest import Live, LiveFactory
from tests.fault_proxy import FaultProxy, Mode
from tests.ferryd_cluster import FerrydCluster, FerrydNode
from tests.helpers import WAIT_S, finished, serve, step, writable_master
from tests.waiting import eventually

DETECTION_POLLS = 2
#: Each poll's bound; the delay mode holds every chunk longer than that.
POLL_TIMEOUT_S = 1.0


def through(replica: FerrydNode, master_address: str) -> None:
    """Points the replica's connection `main` at `master_address` (a proxy in front of the master)."""
    replica.post("/v1/replication/main/stop", {})
    replica.post("/v1/replication/main/change-master", {"master": master_address})
    replica.post("/v1/replication/main/start", {})


def lost_master(node: FerrydNode) -> bool:
    return node.status()["replication"][0]["io_state"] in ("connecting", "reconnecting", "error")


async def register_cluster(client: httpx.AsyncClient, ferryd: FerrydCluster, master: dict[str, int]) -> dict[str, int]:
    """The cluster with auto-failover, the master at the given ports (proxies), the replicas as they are."""
    response = await client.post("/api/v1/clusters", json={"name": "faults", "auto_failover": True})
    assert response.status_code == 201, response.text
    cluster_id = response.json()["id"]
    ids = {"cluster": cluster_id}
    replicas = {
        role: {"protocol_port": node.protocol_port, "admin_port": node.admin_port}
        for role, node in (("replica1", ferryd.replica1), ("replica2", ferryd.replica2))
    }
    for role, ports in {"master": master, **replicas}.items():
        response = await client.post(
            f"/api/v1/clusters/{cluster_id}/servers", json={"name": role, "host": "127.0.0.1", **ports}
        )
        assert response.status_code == 201, response.text
        ids[role] = response.json()["id"]
    return ids


@asynccontextmanager
async def behind_proxies(
    live_app: LiveFactory, ferryd: FerrydCluster
) -> AsyncIterator[tuple[FaultProxy, FaultProxy, Live, dict[str, int]]]:
    """Fault proxies in front of the master's admin API (the control plane's path) and of its replication stream
    (the replicas' path), the replicas replicating through the second, the cluster registered with the master at
    the proxies' ports, and one collector cycle that sees everyone: (admin proxy, stream proxy, live app, ids)."""
    master = ferryd.master
    async with (
        FaultProxy("127.0.0.1", master.admin_port, delay_s=POLL_TIMEOUT_S * 3) as admin,
        FaultProxy("127.0.0.1", master.protocol_port) as stream,
        live_app(
            failover_detection_polls=DETECTION_POLLS, unreachable_after_failures=DETECTION_POLLS,
            poll_timeout_s=POLL_TIMEOUT_S,
        ) as live,
    ):  # fmt: skip
        for replica in (ferryd.replica1, ferryd.replica2):
            await asyncio.to_thread(through, replica, stream.address)
        ids = await register_cluster(live.client, ferryd, {"protocol_port": stream.port, "admin_port": admin.port})
        assert (await live.app.state.collector.run_cycle()).failed == 0
        yield admin, stream, live, ids


async def test_no_failover_while_the_replicas_see_the_master_whatever_the_control_planes_path_does(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    master = ferryd.master
    async with behind_proxies(live_app, ferryd) as (admin, _, live, ids):
        collector, monitor, bus = live.app.state.collector, live.app.state.monitor, live.app.state.bus

        for mode in (Mode.cut, Mode.delay, Mode.blackhole):
            admin.set(mode)
            for _ in range(DETECTION_POLLS + 1):
                await collector.run_cycle()
            server = (await live.client.get(f"/api/v1/clusters/{ids['cluster']}/servers/{ids['master']}")).json()
            assert server["health"] == "unreachable", (mode, server)
            async with bus.subscribe(ids["cluster"]) as events:
                assert await monitor.check() == [], mode
                event = await asyncio.wait_for(events.next(), WAIT_S)
            assert event.type == "failover_not_confirmed" and "still replicate" in event.data.detail, (mode, event)
            admin.set(Mode.passing)
            assert (await collector.run_cycle()).failed == 0, f"the master answers again after {mode}"

        assert (await live.client.get(f"/api/v1/clusters/{ids['cluster']}/operations")).json() == []
        assert writable_master(ferryd.nodes) is master


async def test_failover_when_the_replicas_lose_the_master_too_and_the_old_master_is_fenced_when_it_answers(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    position = ferryd.write(3, domains=(1, 2))
    ferryd.converge()
    old = ferryd.master
    async with behind_proxies(live_app, ferryd) as (admin, stream, live, ids):
        collector, monitor = live.app.state.collector, live.app.state.monitor

        # A partition: the master, alive and writable, is cut off from the control plane and from its replicas.
        admin.set(Mode.blackhole)
        stream.set(Mode.cut)
        for replica in (ferryd.replica1, ferryd.replica2):
            await eventually(
                f"server {replica.server_id} losing the master",
                lambda r=replica: lost_master(r),
                WAIT_S,
                in_thread=True,
            )
        for _ in range(DETECTION_POLLS):
            await collector.run_cycle()
        started = await monitor.check()
        assert len(started) == 1, "the replicas confirm the loss: failover"
        operation = await finished(live.app, live.client, ids["cluster"], started[0])
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert "does not answer" in step(operation, "fence_old_master_first")["detail"]
        new = writable_master([ferryd.replica1, ferryd.replica2])
        assert new.status()["gtid_current_pos"] == position
        assert old.status()["read_only"] is False, "out of reach, the old master could not be fenced yet"

        admin.set(Mode.passing)  # the partition heals on the control plane's side
        await collector.run_cycle()
        await monitor.check()
        assert old.status()["read_only"] is True, "fenced as soon as it answers"
        server = (await live.client.get(f"/api/v1/clusters/{ids['cluster']}/servers/{ids['master']}")).json()
        assert server["fenced"] and "failover operation" in server["fence_reason"]


def reporting_a_failure(node: FerrydNode) -> Any:
    """An ASGI app in front of the node's admin API that forwards every call, but makes its status report a failed
    fsync (what a master that cannot commit says)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {
            k.decode(): v.decode() for k, v in scope["headers"] if k.lower() in (b"authorization", b"content-type")
        }
        url = f"http://{node.admin}{scope['path']}" + (
            f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        )
        async with httpx.AsyncClient(timeout=WAIT_S) as client:
            response = await client.request(scope["method"], url, content=body, headers=headers)
        content = response.content
        if scope["path"] == "/v1/status" and response.status_code == 200:
            status = response.json()
            status["failed"] = "binlog fsync failed: Input/output error (os error 5)"
            content = json.dumps(status).encode()
        await send({"type": "http.response.start", "status": response.status_code,
                    "headers": [(b"content-type", b"application/json")]})  # fmt: skip
        await send({"type": "http.response.body", "body": content})

    return app


async def test_a_master_that_answers_but_reports_a_failure_is_made_read_only_before_the_promotion(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    position = ferryd.write(3, domains=(1, 2))
    ferryd.converge()
    old = ferryd.master
    async with (
        serve(reporting_a_failure(old)) as url,
        live_app(failover_detection_polls=DETECTION_POLLS, unreachable_after_failures=DETECTION_POLLS) as live,
    ):
        admin_port = int(url.rsplit(":", 1)[1])
        ids = await register_cluster(
            live.client, ferryd, {"protocol_port": old.protocol_port, "admin_port": admin_port}
        )
        collector, monitor = live.app.state.collector, live.app.state.monitor
        for _ in range(DETECTION_POLLS):
            await collector.run_cycle()
        server = (await live.client.get(f"/api/v1/clusters/{ids['cluster']}/servers/{ids['master']}")).json()
        assert server["health"] == "failing" and "fsync failed" in server["last_error"], server
        assert server["consecutive_failures"] == DETECTION_POLLS, "a poll reporting a failure fails the check"

        started = await monitor.check()
        assert len(started) == 1, "its own report confirms the loss, though the replicas are still connected"
        operation = await finished(live.app, live.client, ids["cluster"], started[0])
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert "reports a failure" in step(operation, "confirm_master_lost")["detail"]
        names = [s["name"] for s in operation["steps"]]
        assert names.index("fence_old_master_first") < names.index("promote_candidate"), names
        assert "made read-only before the promotion" in step(operation, "fence_old_master_first")["detail"]
        assert old.status()["read_only"] is True
        new = writable_master([ferryd.replica1, ferryd.replica2])
        other = ferryd.replica2 if new is ferryd.replica1 else ferryd.replica1
        assert new.status()["gtid_current_pos"] == position
        await eventually(
            "the other replica following the new master",
            lambda: [(c["name"], c["master"]) for c in other.status()["replication"]] == [("main", new.listen)],
            WAIT_S,
            in_thread=True,
        )


async def test_a_master_that_answers_but_cannot_commit_is_failed_over_when_write_probes_are_on(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """A master stuck in a semi-sync wait no replica will end (its replicas stopped receiving; a ten-minute
    timeout) answers every status call and reports nothing wrong, but commits nothing: the collector's probe write
    times out, the master reports that failure, and it is failed over — read-only before the promotion."""
    semi_sync = ("--durability", "local+network", "--semi-sync-replicas", "1", "--semi-sync-timeout-ms", "600000")
    ferryd = ferryd_factory(semi_sync, read_only_replicas=True)
    position = ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    old, replicas = ferryd.master, [ferryd.replica1, ferryd.replica2]
    async with live_app(
        master_write_probe=True, master_write_probe_timeout_s=POLL_TIMEOUT_S,
        failover_detection_polls=DETECTION_POLLS, unreachable_after_failures=DETECTION_POLLS,
    ) as live:  # fmt: skip
        ids = await register_cluster(live.client, ferryd, {"protocol_port": old.protocol_port,
                                                           "admin_port": old.admin_port})  # fmt: skip
        collector, monitor = live.app.state.collector, live.app.state.monitor
        assert (await collector.run_cycle()).failed == 0  # the links: who is the master
        assert (await collector.run_cycle()).failed == 0, "a master that commits passes its probe"
        path = f"/api/v1/clusters/{ids['cluster']}/servers/{ids['master']}"
        assert (await live.client.get(path)).json()["health"] == "healthy"

        for replica in replicas:  # nobody acknowledges the master's commits any more: they wait
            await asyncio.to_thread(replica.post, "/v1/replication/main/stop", {})
        for _ in range(DETECTION_POLLS):
            await collector.run_cycle()
        server = (await live.client.get(path)).json()
        assert server["health"] == "failing", server
        assert server["last_error"].startswith("write probe: a probe write did not commit within"), server
        assert old.status()["failed"] is None, "the master itself reports nothing wrong"

        started = await monitor.check()
        assert len(started) == 1
        operation = await finished(live.app, live.client, ids["cluster"], started[0])
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert "reports a failure: write probe" in step(operation, "confirm_master_lost")["detail"]
        assert "made read-only before the promotion" in step(operation, "fence_old_master_first")["detail"]
        assert old.status()["read_only"] is True
        new = writable_master(replicas)
        # Everything the clients wrote, and the probes that committed (domain 0, the default domain): replicated
        # like any other transaction.
        assert set(position.split(",")) <= set(new.status()["gtid_current_pos"].split(","))
        # The old master stands for a lost one: it is ended as the crash it stands for.
        old.kill()
