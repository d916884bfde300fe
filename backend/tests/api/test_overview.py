"""The clusters overview: the summary of a topology graph (health, problems in words, masters, replicas, worst lag)
as a pure function, and GET /api/v1/clusters/overview over a real registered ferryd cluster with a drill run."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.models import DrillRun
from ferry_control.schemas.overview import WorstLag
from ferry_control.schemas.topology import TopologyEdge, TopologyGraph, TopologyNode
from ferry_control.services.lag import domain_lag, judge
from ferry_control.services.overview import summarize
from tests.conftest import Tokens
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import register

AT = datetime(2025, 1, 1, tzinfo=UTC)


def node(server_id: int, name: str, role: str, **over: object) -> TopologyNode:
    fields: dict[str, object] = dict(
        registered_server_id=server_id, name=name, label=f"{name} (server_id {server_id})", host="127.0.0.1",
        protocol_port=7300 + server_id,
        admin_port=7400 + server_id, reported_server_id=server_id, health="healthy", maintenance=False,
        read_only=role != "master", role=role, gtid_current_pos=f"1-1-{100 + server_id}",
    )  # fmt: skip
    return TopologyNode.model_validate(fields | over)


def edge(link_id: int, replica: int, **over: object) -> TopologyEdge:
    fields: dict[str, object] = dict(
        link_id=link_id, source="replica", connection="main", master_registered_server_id=1,
        master_address="127.0.0.1:7301",
        replica_registered_server_id=replica, running=True, io_state="connected", sql_state="applying",
        lag={1: domain_lag({"seconds": 0.2, "transactions": 3}, None)}, last_error_code=None, last_error_message=None,
        updated_at=AT,
    )  # fmt: skip
    return TopologyEdge.model_validate(fields | over)


def graph(nodes: list[TopologyNode] | None = None, edges: list[TopologyEdge] | None = None) -> TopologyGraph:
    """A master `a` with two replicas `b` and `c`, each 0.2 s and 3 transactions behind in domain 1."""
    if nodes is None:
        nodes = [node(1, "a", "master"), node(2, "b", "replica"), node(3, "c", "replica")]
    if edges is None:
        edges = [edge(10, 2), edge(11, 3)]
    return TopologyGraph(cluster_id=1, nodes=nodes, edges=edges)


def test_gives_health_master_replicas_and_the_worst_lag() -> None:
    summary = summarize(graph())
    assert summary.model_dump() == {
        "health": "healthy",
        "problems": [],
        "warnings": [],
        "masters": ["a"],
        "replica_count": 2,
        "server_count": 3,
        "worst_lag": {
            "seconds": 0.2,
            "transactions": 3,
            "delay_s": 0,
            "beyond_delay_s": 0.2,
            "level": "low",
            "words": "200 ms · 3 txn",
            "replica": "b (server_id 2)",
            "connection": "main",
            "domain": 1,
        },
        "alerts": [],
    }


def test_says_why_a_cluster_is_degraded_in_words() -> None:
    nodes = [node(1, "a", "master"), node(2, "b", "replica"), node(3, "c", "replica", health="unreachable")]
    edges = [edge(10, 2, io_state="error", last_error_code="purged"), edge(11, 3)]
    summary = summarize(graph(nodes, edges))
    assert summary.health == "degraded"
    assert summary.problems == ["c (server_id 3) unreachable", "b (server_id 2): purged"]


def test_is_down_without_a_master() -> None:
    assert summarize(graph([node(2, "b", "replica"), node(3, "c", "replica")], [])).health == "down"


def test_is_down_when_every_server_is_unreachable() -> None:
    nodes = [node(1, "a", "master", health="unreachable"), node(2, "b", "replica", health="unreachable")]
    assert summarize(graph(nodes, [edge(10, 2)])).health == "down"


def test_an_empty_cluster_is_empty_and_has_no_lag() -> None:
    summary = summarize(graph([], []))
    assert (summary.health, summary.masters, summary.server_count, summary.worst_lag) == ("empty", [], 0, None)


def test_a_lone_standalone_server_is_the_master() -> None:
    summary = summarize(graph([node(1, "a", "standalone")], []))
    assert (summary.health, summary.masters, summary.replica_count, summary.worst_lag) == ("healthy", ["a"], 0, None)


def test_maintenance_stopped_replication_unknown_replicas_and_two_masters_of_one_domain_are_problems() -> None:
    nodes = [
        node(1, "a", "master", maintenance=True),
        node(2, "b", "intermediate"),
        node(4, "d", "master", gtid_current_pos="1-4-104"),
    ]
    edges = [
        edge(10, 2, running=False),
        edge(11, 9, last_error_code="connect_failed"),
        edge(12, 2, source="master", running=False),
    ]
    summary = summarize(graph(nodes, edges))
    assert summary.health == "degraded"
    assert summary.problems == [
        "a (server_id 1) in maintenance", "b (server_id 2): replication stopped",
        "the server with id 9: connect_failed", "2 masters write domain 1: a (server_id 1), d (server_id 4)",
    ]  # fmt: skip
    assert (summary.masters, summary.replica_count) == (["a", "d"], 1)


def test_several_masters_each_the_origin_of_its_own_domains_are_a_shape_not_a_fault() -> None:
    """The two-master shape: masters 1 and 2 write domains 1 and 2, server 3 replicates from both, 4 and 5 from it."""
    nodes = [
        node(1, "s1", "master", gtid_current_pos="1-1-50"),
        node(2, "s2", "master", gtid_current_pos="2-2-40"),
        node(3, "s3", "intermediate", gtid_current_pos="1-1-50,2-2-40"),
        node(4, "s4", "replica", gtid_current_pos="1-1-48,2-2-40"),
    ]
    edges = [edge(10, 3), edge(11, 3, master_registered_server_id=2), edge(12, 4, master_registered_server_id=3)]
    summary = summarize(graph(nodes, edges))
    assert (summary.health, summary.problems, summary.masters) == ("healthy", [], ["s1", "s2"])


def test_the_worst_lag_is_one_connection_s_figure_named() -> None:
    """The worst is the most seconds beyond the delay; its transactions and words are that connection's own (never
    seconds of one connection beside transactions of another)."""
    lags = {
        1: domain_lag({"seconds": 4.0, "transactions": 1}, None),
        2: domain_lag({"seconds": 0.1, "transactions": 50}, None),
    }
    summary = summarize(graph(edges=[edge(10, 2, lag=lags), edge(11, 3, lag={})]))
    assert summary.worst_lag == WorstLag(
        **judge(4.0, 1).model_dump(), replica="b (server_id 2)", connection="main", domain=1
    )
    assert summary.worst_lag is not None and summary.worst_lag.words == "4.0 s · 1 txn"


async def test_overview_of_a_registered_cluster_with_its_last_drill(
    app: FastAPI,
    client: httpx.AsyncClient,
    anonymous: httpx.AsyncClient,
    tokens: Tokens,
    sessionmaker: async_sessionmaker[AsyncSession],
    ferryd: FerrydCluster,
) -> None:
    cluster_id, _ = await register(client, ferryd, name="overview", auto_failover=True)
    empty = (await client.post("/api/v1/clusters", json={"name": "overview-empty"})).json()
    ferryd.converge()
    # Replicas read-only, as a deployment keeps them (a writable replica is a problem of its own); the session's
    # nodes are given back as they were.
    for replica in (ferryd.replica1, ferryd.replica2):
        replica.post("/v1/read-only", {"read_only": True})
    try:
        await app.state.collector.run_cycle()
    finally:
        for replica in (ferryd.replica1, ferryd.replica2):
            replica.post("/v1/read-only", {"read_only": False})
    async with session_scope(sessionmaker) as session:
        session.add(DrillRun(cluster_id=cluster_id, state="failed", passed=False, started_at=AT))
        session.add(DrillRun(cluster_id=cluster_id, state="passed", passed=True, rto_s=0.25, started_at=AT))

    response = await client.get("/api/v1/clusters/overview", headers=tokens.header("viewer"))
    assert response.status_code == 200, response.text
    items = {item["id"]: item for item in response.json()}
    cluster = (await client.get(f"/api/v1/clusters/{cluster_id}")).json()
    item = items[cluster_id]
    assert {key: item[key] for key in cluster} == cluster
    assert item["health"] == "healthy", item["problems"]
    assert (item["problems"], item["masters"], item["replica_count"], item["server_count"]) == ([], ["master"], 2, 3)
    assert item["worst_lag"] is not None and item["worst_lag"]["transactions"] == 0
    drill = item["last_drill"]
    assert {key: drill[key] for key in ("state", "rto_s")} == {"state": "passed", "rto_s": 0.25}
    assert set(drill) == {"id", "state", "started_at", "rto_s"}
    assert items[empty["id"]] | {"health": "empty", "last_drill": None, "worst_lag": None} == items[empty["id"]]

    assert (await anonymous.get("/api/v1/clusters/overview")).status_code == 401


def test_lag_is_judged_against_the_configured_delay() -> None:
    """A replica delayed 30 s on purpose and 30 s behind is at its delay: level none, in the words every surface
    uses; 32 s behind is 2 s beyond it."""
    delayed = {"delay_s": 30}
    at_delay = summarize(graph(edges=[edge(10, 2, lag={1: domain_lag({"seconds": 30.0, "transactions": 8}, delayed)},
                                           settings=delayed)]))  # fmt: skip
    assert at_delay.health == "healthy" and at_delay.worst_lag is not None
    assert (at_delay.worst_lag.seconds, at_delay.worst_lag.beyond_delay_s, at_delay.worst_lag.level) == (
        30.0,
        0,
        "none",
    )
    assert at_delay.worst_lag.words == "30 s (delay 30 s, +0 s) · 8 txn"
    beyond = summarize(graph(edges=[edge(10, 2, lag={1: domain_lag({"seconds": 32.0, "transactions": 8}, delayed)},
                                          settings=delayed)]))  # fmt: skip
    assert beyond.worst_lag is not None
    assert (beyond.worst_lag.beyond_delay_s, beyond.worst_lag.level) == (2.0, "low")
    assert beyond.worst_lag.words == "32 s (delay 30 s, +2.0 s) · 8 txn"


def test_the_delayed_replica_at_its_delay_is_not_worse_than_a_replica_behind() -> None:
    """A replica 3 s behind without a delay is worse than one at its 30 s delay: the overview names it."""
    delayed = {"delay_s": 30}
    edges = [
        edge(10, 2, lag={1: domain_lag({"seconds": 30.0, "transactions": 400}, delayed)}, settings=delayed),
        edge(11, 3, lag={1: domain_lag({"seconds": 3.0, "transactions": 2}, None)}),
    ]
    worst = summarize(graph(edges=edges)).worst_lag
    assert worst is not None and (worst.replica, worst.words) == ("c (server_id 3)", "3.0 s · 2 txn")


def test_a_stalled_sql_side_is_a_warning_with_its_reason() -> None:
    """A lock wait on a replica lets go by itself: flagged, without making the cluster degraded."""
    stall = {"transactions_waiting": 185, "domains": [1], "no_progress_s": 7.2, "reason": "Waiting for table lock"}
    summary = summarize(graph(edges=[edge(10, 2, stall=stall), edge(11, 3)]))
    assert (summary.health, summary.problems) == ("healthy", [])
    assert summary.warnings == [
        "b (server_id 2): stalled in domain 1: 185 transactions waiting, no progress for 7 s (Waiting for table lock)"
    ]
