"""Deleting a cluster, or one of its servers, while background work writes their rows. The collector runs cycles on
a tight interval over real ferryd nodes kept busy by the load writer (so each cycle updates the cluster's servers and
links and inserts position and lag samples, as the demo workload makes it in the end-to-end stack), a discovery
registers the servers, an event stream is open on the cluster (a dashboard showing it), and the DELETE comes at once
or a cycle or two later — a few dozen times, every other time after one of the cluster's servers was removed the same
way. Every DELETE answers 204: it waits for a record under way instead of deadlocking with it (the collector holds the
clusters it records first, services/collection/recording.py; removing a server keeps those writers out first,
ClusterRepository.exclude_writers), and no record meets a server removed half-way. Nothing of the cluster is left,
and the collector's cycles, its after-cycle hooks and the open stream go on without a failure."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from tests.conftest import LiveFactory
from tests.ferryd_cluster import ADMIN_PORT_OFFSET
from tests.helpers import LoadWriter, cycles_ended, serve
from tests.waiting import WAIT_S

#: Clusters registered, discovered and deleted in a row (before the fix, one DELETE in a few met a deadlock).
TRIES = 36
PING = ": ping"
WRITES_PER_S = 100.0


@pytest.mark.long
async def test_a_cluster_deleted_while_the_collector_records_it_answers_204_and_nothing_fails_after(
    live_app: LiveFactory, ferryd_factory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ferry_control")
    ferryd = ferryd_factory(read_only_replicas=True)
    # A hundred commits a second move every server's position in every 50 ms cycle; more only burns the machine.
    writer = await LoadWriter.start(ferryd.nodes, clients=2, domains=3, rate=WRITES_PER_S)
    seed = ferryd.replica2
    try:
        async with (
            live_app(collector_enabled=True, poll_interval_s=0.05, events_ping_s=0.1) as live,
            serve(live.app) as base,
            httpx.AsyncClient(base_url=base, headers=live.tokens.header("operator"), timeout=WAIT_S) as client,
        ):
            # The stack's own cluster, of the same nodes: recorded in the same cycles as the one deleted.
            local = (
                await client.post("/api/v1/clusters", json={"name": "local", "admin_port_offset": ADMIN_PORT_OFFSET})
            ).json()
            master = {"host": "127.0.0.1", "protocol_port": ferryd.master.protocol_port,
                      "admin_port": ferryd.master.admin_port}  # fmt: skip
            assert (await client.post(f"/api/v1/clusters/{local['id']}/discovery", json=master)).status_code == 200
            for attempt in range(TRIES):
                created = await client.post(
                    "/api/v1/clusters", json={"name": f"gone-{attempt}", "admin_port_offset": ADMIN_PORT_OFFSET}
                )
                assert created.status_code == 201, created.text
                cluster_id = created.json()["id"]
                found = await client.post(
                    f"/api/v1/clusters/{cluster_id}/discovery",
                    json={"name": "seed", "host": "127.0.0.1", "protocol_port": seed.protocol_port,
                          "admin_port": seed.admin_port},
                )  # fmt: skip
                assert found.status_code == 200, found.text
                assert len(found.json()["added"]) == 2, found.text  # the master and the other replica
                if attempt % 2:  # one server removed first, while cycles record the cluster
                    await cycles_ended(live, attempt % 3)
                    removed = found.json()["added"][attempt % 4 // 2]
                    server_path = f"/api/v1/clusters/{cluster_id}/servers/{removed['id']}"
                    deleted = await client.delete(server_path)
                    assert deleted.status_code == 204, f"attempt {attempt}: {deleted.status_code} {deleted.text}"
                async with client.stream("GET", f"/api/v1/clusters/{cluster_id}/events") as stream:
                    assert stream.status_code == 200
                    events = stream.aiter_lines()
                    assert await anext(events) == "event: subscribed"
                    await cycles_ended(live, attempt % 3)  # at once, or once a cycle or two recorded it
                    deleted = await client.delete(f"/api/v1/clusters/{cluster_id}")
                    assert deleted.status_code == 204, f"attempt {attempt}: {deleted.status_code} {deleted.text}"
                    async with asyncio.timeout(WAIT_S):
                        async for line in events:
                            if line == PING:
                                break  # the stream is still served after its cluster went
                gone = await client.get(f"/api/v1/clusters/{cluster_id}/events")
                assert gone.status_code == 404 and gone.json()["error"]["code"] == "cluster_not_found", gone.text
            await cycles_ended(live, 3)
            assert [c["name"] for c in (await client.get("/api/v1/clusters")).json()] == ["local"]
    finally:
        try:
            await writer.stop()
        finally:
            writer.kill()
    failures = [
        f"{r.name} {r.levelname}: {r.getMessage()}"
        for r in caplog.records
        if r.name.startswith("ferry_control") and (r.levelno >= logging.WARNING or "failed" in r.getMessage())
    ]
    assert failures == [], "\n".join(failures)
