"""The collector against a real three-node ferryd cluster (a master and two replicas): the positions matrix,
lag per replica per domain, topology edges, change-only position samples, unreachable servers, and the SSE
stream. Each test leaves the nodes replicating as it found them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

import httpx
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import HealthEvent
from tests.conftest import Tokens
from tests.ferryd_cluster import FerrydCluster, FerrydNode, free_port_pair
from tests.helpers import register, serve

#: Bound on every wait for a condition in these tests.
WAIT_S = 30.0


@asynccontextmanager
async def replication_stopped(node: FerrydNode) -> AsyncIterator[None]:
    node.post("/v1/replication/main/stop", {})
    try:
        yield
    finally:
        node.post("/v1/replication/main/start", {})


async def test_positions_matrix_lag_and_topology(
    app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    cluster_id, ids = await register(client, ferryd)
    caught_up = ferryd.converge()
    await app.state.collector.run_cycle()

    matrix = (await client.get(f"/api/v1/clusters/{cluster_id}/positions")).json()
    assert matrix["most_advanced"] == caught_up
    assert set(matrix["domains"]) >= {1, 2}
    assert all(row["gtid_current_pos"] == caught_up for row in matrix["rows"])
    assert all(row["ahead_of_all"] for row in matrix["rows"]), "equal positions are ahead of each other"
    assert sorted(matrix["could_be_master"]) == sorted(ids.values())
    # Each row names the server by both ids, each called what it is: server_id is the one the server reports.
    servers = (await client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()
    reported = {s["id"]: s["reported_server_id"] for s in servers}
    assert None not in reported.values()
    assert {row["registered_server_id"]: row["server_id"] for row in matrix["rows"]} == reported

    async with replication_stopped(ferryd.replica2):
        ahead = ferryd.write(4, domains=(1,))
        ferryd.replica1.wait_for(ahead)
        await app.state.collector.run_cycle()

        matrix = (await client.get(f"/api/v1/clusters/{cluster_id}/positions", params={"reached": ahead})).json()
        rows = {row["registered_server_id"]: row for row in matrix["rows"]}
        behind = rows[ids["replica2"]]
        assert behind["cells"]["1"]["behind_transactions"] == 4
        assert behind["cells"]["2"]["behind_transactions"] == 0
        assert not behind["ahead_of_all"] and behind["has_reached"] is False
        assert rows[ids["replica1"]]["has_reached"] is True
        assert sorted(matrix["could_be_master"]) == sorted([ids["master"], ids["replica1"]])

        topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        roles = {node["registered_server_id"]: node["role"] for node in topology["nodes"]}
        assert roles == {ids["master"]: "master", ids["replica1"]: "replica", ids["replica2"]: "replica"}
        edges = {edge["replica_registered_server_id"]: edge for edge in topology["edges"]}
        assert set(edges) == {ids["replica1"], ids["replica2"]}
        for edge in edges.values():
            assert (edge["connection"], edge["source"], edge["master_registered_server_id"]) == (
                "main",
                "replica",
                ids["master"],
            )
            assert edge["master_address"] == ferryd.master.listen
        assert (edges[ids["replica1"]]["io_state"], edges[ids["replica1"]]["running"]) == ("connected", True)
        assert (edges[ids["replica2"]]["io_state"], edges[ids["replica2"]]["running"]) == ("stopped", False)
        assert edges[ids["replica1"]]["lag"]["1"]["transactions"] == 0
        assert edges[ids["replica2"]]["lag"]["1"]["transactions"] == 4

        lag = (
            await client.get(
                f"/api/v1/clusters/{cluster_id}/lag/history",
                params={"replica_registered_server_id": ids["replica2"], "domain": 1},
            )
        ).json()
        assert lag["samples"][-1]["transactions"] == 4 and lag["samples"][-1]["connection"] == "main"

    ferryd.converge()
    await app.state.collector.run_cycle()
    topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
    assert all(edge["lag"]["1"]["transactions"] == 0 and edge["running"] for edge in topology["edges"])
    lag = (
        await client.get(
            f"/api/v1/clusters/{cluster_id}/lag/history",
            params={"replica_registered_server_id": ids["replica2"], "domain": 1},
        )
    ).json()
    assert [s["transactions"] for s in lag["samples"]][-2:] == [4, 0]

    # A range starting between two samples begins with the older one's value (it held until the next).
    lagging, caught_up = lag["samples"][-2:]
    between = (
        datetime.fromisoformat(lagging["sampled_at"])
        + (datetime.fromisoformat(caught_up["sampled_at"]) - datetime.fromisoformat(lagging["sampled_at"])) / 2
    )
    later = (
        await client.get(
            f"/api/v1/clusters/{cluster_id}/lag/history",
            params={"replica_registered_server_id": ids["replica2"], "domain": 1, "since": between.isoformat()},
        )
    ).json()
    assert [(s["transactions"], s["sampled_at"]) for s in later["at_start"]] == [(4, lagging["sampled_at"])]
    assert [s["transactions"] for s in later["samples"]] == [0]


async def test_position_samples_are_change_only(app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster) -> None:
    cluster_id, ids = await register(client, ferryd)
    ferryd.converge()
    await app.state.collector.run_cycle()
    history = lambda: client.get(f"/api/v1/clusters/{cluster_id}/positions/history", params={"limit": 10000})  # noqa: E731
    first = (await history()).json()["samples"]
    assert {(s["registered_server_id"], s["domain_id"]) for s in first} >= {
        (i, d) for i in ids.values() for d in (1, 2)
    }

    await app.state.collector.run_cycle()
    assert (await history()).json()["samples"] == first, "nothing changed, nothing recorded"

    position = ferryd.write(1, domains=(2,))
    ferryd.converge()
    await app.state.collector.run_cycle()
    new = (await history()).json()["samples"][len(first) :]
    gtid = next(g for g in position.split(",") if g.startswith("2-"))
    assert sorted((s["registered_server_id"], s["domain_id"], s["gtid"]) for s in new) == sorted(
        (i, 2, gtid) for i in ids.values()
    )

    only_master = await client.get(
        f"/api/v1/clusters/{cluster_id}/positions/history", params={"registered_server_id": ids["master"], "domain": 2}
    )
    assert only_master.json()["samples"][-1]["gtid"] == gtid
    assert {s["registered_server_id"] for s in only_master.json()["samples"]} == {ids["master"]}
    # The filter's old name is refused naming the new one, not answered unfiltered.
    old = await client.get(f"/api/v1/clusters/{cluster_id}/positions/history", params={"server_id": ids["master"]})
    assert old.status_code == 422, old.text
    assert old.json()["error"]["message"].startswith("query.server_id: server_id was renamed registered_server_id: ")
    old_lag = await client.get(f"/api/v1/clusters/{cluster_id}/lag/history", params={"replica_server_id": 1})
    assert old_lag.status_code == 422
    assert "send replica_registered_server_id" in old_lag.json()["error"]["message"]


async def test_a_server_that_does_not_answer_becomes_unreachable(
    app: FastAPI, client: httpx.AsyncClient, session: AsyncSession, ferryd: FerrydCluster
) -> None:
    cluster_id, ids = await register(client, ferryd)
    silent_port, silent_admin = free_port_pair()
    silent = (
        await client.post(
            f"/api/v1/clusters/{cluster_id}/servers",
            json={"name": "silent", "host": "127.0.0.1", "protocol_port": silent_port, "admin_port": silent_admin},
        )
    ).json()
    await app.state.collector.run_cycle()
    after_one = (await client.get(f"/api/v1/clusters/{cluster_id}/servers/{silent['id']}")).json()
    assert (after_one["health"], after_one["consecutive_failures"]) == ("unknown", 1)
    assert "unreachable" in after_one["last_error"]
    await app.state.collector.run_cycle()
    servers = {s["id"]: s for s in (await client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()}
    assert servers[silent["id"]]["health"] == "unreachable"
    assert all(servers[i]["health"] == "healthy" and servers[i]["last_seen_at"] for i in ids.values())
    assert servers[ids["replica1"]]["reported_server_id"] == 2
    events = (await session.scalars(select(HealthEvent).where(HealthEvent.server_id == silent["id"]))).all()
    assert [e.state.value for e in events] == ["unreachable"]


async def test_interleavings_align_every_servers_recent_transactions(
    client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    cluster_id, ids = await register(client, ferryd)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    recent = [e["gtid"] for e in ferryd.master.get("/v1/binlog/events?limit=4")["events"]]
    body = (await client.get(f"/api/v1/clusters/{cluster_id}/interleavings", params={"limit": 4})).json()
    for server in body["servers"]:
        assert server["error"] is None
        assert [t["gtid"] for t in server["transactions"]] == recent, server["name"]
    union = {t["gtid"]: t for t in body["union"]}
    assert set(union) == set(recent)
    for gtid in recent:
        assert set(map(int, union[gtid]["positions"])) == set(ids.values())
    timestamps = [t["commit_ts_us"] for t in body["union"]]
    assert timestamps == sorted(timestamps)


async def test_collector_metrics_are_exported(app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster) -> None:
    await register(client, ferryd)
    await app.state.collector.run_cycle()
    text = (await client.get("/metrics")).text
    assert "ferry_control_collector_cycle_seconds_count 1.0" in text
    assert 'ferry_control_collector_polls_total{outcome="ok"} 3.0' in text
    assert 'ferry_control_http_requests_total{handler="create_server",method="POST",status="201"} 3.0' in text


async def test_sse_delivers_a_position_change(
    app: FastAPI, tokens: Tokens, client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    cluster_id, ids = await register(client, ferryd)
    await app.state.collector.run_cycle()
    try:
        async with serve(app) as base:
            url = f"{base}/api/v1/clusters/{cluster_id}/events"
            async with httpx.AsyncClient(timeout=WAIT_S, headers=tokens.header("viewer")) as sse:
                async with sse.stream("GET", url) as stream, asyncio.timeout(WAIT_S):
                    assert stream.status_code == 200
                    assert stream.headers["content-type"].startswith("text/event-stream")
                    events = sse_events(stream)
                    assert (await anext(events))[0] == "subscribed"
                    gtid = ferryd.master.increment("sse", "k", domain=3)
                    await app.state.collector.run_cycle()
                    async for name, data in events:
                        if name == "position" and data["registered_server_id"] == ids["master"] and data["domain"] == 3:
                            assert data["gtid"] == gtid and data["cluster_id"] == cluster_id
                            break
    finally:
        ferryd.converge()


@asynccontextmanager
async def viewer_events(
    app: FastAPI, tokens: Tokens, cluster_id: int
) -> AsyncIterator[AsyncIterator[tuple[str, dict]]]:
    """A viewer's event stream of the cluster on the app served on a real port, read past its `subscribed`."""
    async with (
        serve(app) as base,
        httpx.AsyncClient(timeout=WAIT_S, headers=tokens.header("viewer")) as sse,
        sse.stream("GET", f"{base}/api/v1/clusters/{cluster_id}/events") as stream,
    ):
        assert stream.status_code == 200
        events = sse_events(stream)
        assert (await anext(events))[0] == "subscribed"
        yield events


async def sse_events(stream: httpx.Response) -> AsyncIterator[tuple[str, dict]]:
    name, data = "message", ""
    async for line in stream.aiter_lines():
        if line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data += line[len("data:") :].strip()
        elif line == "" and data:
            yield name, json.loads(data)
            name, data = "message", ""


async def test_a_server_answering_nonsense_is_the_only_one_in_error(
    app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    """A server whose status has a malformed position is recorded as erroring with the reason; every other server
    of the cluster is recorded as usual in the same cycle."""
    cluster_id, ids = await register(client, ferryd)
    caught_up = ferryd.converge()

    async def liar(scope: dict, receive: object, send: object) -> None:  # a ferryd admin API that lies
        assert scope["type"] == "http"
        status = await asyncio.to_thread(ferryd.replica2.status)
        status["gtid_binlog_pos"] = "1-3-x"
        body = json.dumps(status).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    async with serve(liar) as url:
        admin_port = int(url.rsplit(":", 1)[1])
        protocol_port, _ = free_port_pair()
        response = await client.post(
            f"/api/v1/clusters/{cluster_id}/servers",
            json={"name": "liar", "host": "127.0.0.1", "protocol_port": protocol_port, "admin_port": admin_port},
        )
        assert response.status_code == 201, response.text
        liar_id = response.json()["id"]
        report = await app.state.collector.run_cycle()
        assert (report.polled, report.failed) == (4, 1)

    servers = {s["id"]: s for s in (await client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()}
    assert "invalid gtid_binlog_pos '1-3-x'" in servers[liar_id]["last_error"], servers[liar_id]
    assert servers[liar_id]["gtid_binlog_pos"] is None, "nothing of a nonsense answer is stored"
    for server_id in ids.values():
        assert servers[server_id]["health"] == "healthy" and servers[server_id]["gtid_current_pos"] == caught_up
    topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
    assert {e["replica_registered_server_id"] for e in topology["edges"]} == {ids["replica1"], ids["replica2"]}


async def test_lag_in_seconds_is_measured_from_when_the_master_was_seen_past_the_replica(
    app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    cluster_id, ids = await register(client, ferryd)
    ferryd.converge()
    collector = app.state.collector
    await collector.run_cycle()

    async def lag_of_replica2() -> dict:
        topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        return next(e for e in topology["edges"] if e["replica_registered_server_id"] == ids["replica2"])["lag"]["1"]

    assert (await lag_of_replica2())["seconds"] == 0.0
    async with replication_stopped(ferryd.replica2):
        ferryd.write(2, domains=(1,))
        await collector.run_cycle()  # the master is first seen past replica2 here
        master = (await client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['master']}")).json()
        first_seen = datetime.fromisoformat(master["last_seen_at"])
        await collector.run_cycle()
        replica2 = (await client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}")).json()
        lag = await lag_of_replica2()
        assert lag["transactions"] == 2
        assert lag["seconds"] == (datetime.fromisoformat(replica2["last_seen_at"]) - first_seen).total_seconds() > 0
        assert "reported_seconds" in lag, "the server's own figure is kept beside it"
    ferryd.converge()
    await collector.run_cycle()
    assert (await lag_of_replica2()) | {"reported_seconds": None} == {
        "transactions": 0,
        "seconds": 0.0,
        "reported_seconds": None,
        # Judged against the connection's configured delay (none here): caught up, in the words every surface uses.
        "delay_s": 0,
        "beyond_delay_s": 0.0,
        "level": "none",
        "words": "0 s · 0 txn",
    }


async def test_recent_cycles_show_each_cycles_duration_and_failed_polls(
    app: FastAPI, client: httpx.AsyncClient, anonymous: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    await register(client, ferryd)
    await app.state.collector.run_cycle()
    silent_port, silent_admin = free_port_pair()
    cluster_id = (await client.get("/api/v1/clusters")).json()[0]["id"]
    await client.post(
        f"/api/v1/clusters/{cluster_id}/servers",
        json={"name": "silent", "host": "127.0.0.1", "protocol_port": silent_port, "admin_port": silent_admin},
    )
    await app.state.collector.run_cycle()

    answer = await client.get("/api/v1/collector/cycles")
    assert answer.status_code == 200
    body = answer.json()
    assert body["instance_id"] == app.state.collector.lease.instance_id
    assert [(c["polled"], c["failed"]) for c in body["cycles"]] == [(3, 0), (4, 1)]
    assert all(c["duration_s"] > 0 for c in body["cycles"])
    assert body["cycles"][0]["finished_at"] <= body["cycles"][1]["finished_at"]
    newest = (await client.get("/api/v1/collector/cycles", params={"limit": 1})).json()["cycles"]
    assert [(c["polled"], c["failed"]) for c in newest] == [(4, 1)]
    assert (await anonymous.get("/api/v1/collector/cycles")).status_code == 401

    # The server behind the failed poll, with the collector's error: the silent one, never read (no server_id yet).
    silent = next(
        s for s in (await client.get(f"/api/v1/clusters/{cluster_id}/servers")).json() if s["name"] == "silent"
    )
    await app.state.collector.run_cycle()
    answer = await client.get("/api/v1/collector/failed-polls")
    assert answer.status_code == 200
    failed = answer.json()
    assert (failed["cycles"], failed["failed"], failed["unnamed"]) == (3, 2, 0)
    assert failed["since"] == body["cycles"][0]["finished_at"]
    [row] = failed["servers"]
    assert row | {"last_error": None, "first_failed_at": None, "last_failed_at": None} == {
        "cluster_id": cluster_id,
        "cluster": "ferry",
        "registered_server_id": silent["id"],
        "server_id": None,
        "server": "silent (server_id not read yet)",
        "failed": 2,
        "first_failed_at": None,
        "last_failed_at": None,
        "last_error": None,
    }
    assert f"127.0.0.1:{silent_admin}" in row["last_error"], row["last_error"]
    assert row["first_failed_at"] == body["cycles"][1]["finished_at"] < row["last_failed_at"]
    # Over the newest cycle alone: that one failure.
    newest_only = (await client.get("/api/v1/collector/failed-polls", params={"limit": 1})).json()
    assert (newest_only["cycles"], newest_only["failed"], [r["failed"] for r in newest_only["servers"]]) == (1, 1, [1])
    for bad in ("0", "901", "x"):
        assert (await client.get("/api/v1/collector/failed-polls", params={"limit": bad})).status_code == 422
    assert (await anonymous.get("/api/v1/collector/failed-polls")).status_code == 401

    # A server removed since is still counted, said removed.
    assert (await client.delete(f"/api/v1/clusters/{cluster_id}/servers/{silent['id']}")).status_code == 204
    [gone] = (await client.get("/api/v1/collector/failed-polls")).json()["servers"]
    assert (gone["server"], gone["failed"], gone["server_id"]) == (
        f"a server removed since (registered id {silent['id']})",
        2,
        None,
    )
