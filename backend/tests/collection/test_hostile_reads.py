"""A lying server's answers are checked on every path, not only the collector's poll: its binlog listing (read for
the interleavings of its whole cluster), its checksums (read by drills), and its status as an operation's snapshot
reads it (what candidate choice compares). Each lie is that server's error, naming what was wrong; the honest
servers beside it — a real ferryd cluster — are read as usual. The liars are fake ferryd admin APIs
(`hostile_servers.FakeNode`)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from ferry_control.drivers.errors import ServerProtocolError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import Cluster, ServerKind
from ferry_control.repositories.servers import ServerRepository
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot
from tests.ferryd_cluster import FerrydCluster, free_port_pair
from tests.helpers import register
from tests.hostile_servers import Answer, FakeNode, serving, valid_status

EVENT = {"gtid": "1-9-5", "domain": 1, "server_id": 9, "seq_no": 5, "commit_id": 1, "file": "b.000001", "offset": 4}

#: Binlog listings that lie, each with the words its server's error must hold.
EVENT_LIES: dict[str, tuple[Any, str]] = {
    "not an object": ([1, 2], "not an object"),
    "events not a list": ({"events": "x"}, "events is 'x', not a list"),
    "an event not an object": ({"events": ["x"]}, "events[0]: is 'x', not an object"),
    "seq_no missing": ({"events": [{k: v for k, v in EVENT.items() if k != "seq_no"}]}, "lacks 'seq_no'"),
    "seq_no as text": ({"events": [{**EVENT, "seq_no": "5"}]}, "seq_no is '5', not an integer"),
    "gtid not its parts": ({"events": [{**EVENT, "gtid": "1-9-6"}]}, "gtid '1-9-6' is not 1-9-5"),
    "inflated seq_no": ({"events": [{**EVENT, "gtid": f"1-9-{2**70}", "seq_no": 2**70}]}, "outside 0.."),
    "tables not names": ({"events": [{**EVENT, "tables": [{"x": 1}]}]}, "a table name is {'x': 1}"),
    "more than asked": ({"events": [EVENT] * 6}, "answered 6 events where at most 5 were asked"),
}


async def add_liar(client: httpx.AsyncClient, cluster_id: int, url: str, name: str = "liar") -> int:
    response = await client.post(f"/api/v1/clusters/{cluster_id}/servers", json={
        "name": name, "host": "127.0.0.1", "protocol_port": free_port_pair()[0],
        "admin_port": int(url.rsplit(":", 1)[1]),
    })  # fmt: skip
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


async def test_a_lying_binlog_listing_is_its_servers_error_in_the_clusters_interleavings(
    client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    ferryd.master.increment("hostile_reads", "k", domain=1)
    cluster_id, honest = await register(client, ferryd, name="interleaved")
    node = FakeNode()
    async with serving(node) as url:
        liar_id = await add_liar(client, cluster_id, url)
        for lie, (document, words) in EVENT_LIES.items():
            node.answer = Answer.json(document)
            response = await client.get(f"/api/v1/clusters/{cluster_id}/interleavings", params={"limit": 5})
            assert response.status_code == 200, (lie, response.text)
            servers = {s["registered_server_id"]: s for s in response.json()["servers"]}
            error = servers[liar_id]["error"]
            assert error and "bad_events" in error and words in error, (lie, error)
            assert servers[liar_id]["transactions"] == [], lie
            assert servers[honest["master"]]["error"] is None and servers[honest["master"]]["transactions"], lie


CHECKSUM_LIES: dict[str, tuple[Any, str]] = {
    "not an object": ("x", "the document is 'x', not an object"),
    "tables missing": ({"position": "1-9-5"}, "lacks 'tables'"),
    "a table not an object": ({"position": "1-9-5", "tables": {"t": 5}}, "table 't': is 5, not an object"),
    "rows as text": ({"position": "1-9-5", "tables": {"t": {"rows": "5", "checksum": 1}}}, "rows is '5'"),
    "position not text": ({"position": 5, "tables": {}}, "position is 5, not a string"),
}


@pytest.mark.parametrize("lie", sorted(CHECKSUM_LIES))
async def test_lying_checksums_are_the_nodes_protocol_error(app: FastAPI, lie: str) -> None:
    document, words = CHECKSUM_LIES[lie]
    node = FakeNode(Answer.json(document))
    drivers: DriverFactory = app.state.drivers
    async with serving(node) as url:
        driver = drivers.for_address(ServerKind.ferry, url.removeprefix("http://"))
        with pytest.raises(ServerProtocolError) as refused:
            await driver.checksums()
    assert refused.value.code == "bad_checksums" and words in refused.value.message, refused.value


async def test_an_operations_snapshot_leaves_out_a_server_whose_status_does_not_validate(
    app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    """A replica claiming a GTID beyond any a server can hold would win a candidate choice: the snapshot an
    operation takes has no status for it, and says why."""
    inflated = f"1-9-{2**63}"  # parses (a seq_no is 64 bits) but no server can hold it (BIGINT)
    node = FakeNode(Answer.json(valid_status(gtid_binlog_pos=inflated, gtid_current_pos=inflated)))
    cluster_id, honest = await register(client, ferryd, name="snapshot")
    async with serving(node) as url:
        liar_id = await add_liar(client, cluster_id, url)
        async with app.state.sessionmaker() as session:
            cluster = await session.get(Cluster, cluster_id)
            assert cluster is not None
            servers = list(await ServerRepository(session).list_for_cluster(cluster_id))
        snapshot = await ClusterSnapshot.take(cluster, servers, app.state.drivers, 5.0)
    liar = snapshot.view(liar_id)
    assert liar.status is None and liar.error is not None and "not valid" in liar.error, liar.error
    assert f"gtid_binlog_pos whose seq_no {2**63} is beyond" in liar.error, liar.error
    for server_id in honest.values():
        assert snapshot.view(server_id).status is not None, snapshot.view(server_id).error


#: Answers to an operation's changes that lie, each with the call, its error code and the words it must hold.
CHANGE_LIES: dict[str, tuple[str, Any, str, str]] = {
    "read-only as text": ("set_read_only", {"read_only": "no"}, "bad_read_only", "read_only is 'no', not a boolean"),
    "read-only not a document": ("set_read_only", [True], "bad_read_only", "not an object"),
    "reached as text": ("wait", {"reached": "yes", "position": "1-9-5"}, "bad_wait", "reached is 'yes'"),
    "position not a position": ("wait", {"reached": True, "position": "x"}, "bad_wait", "position"),
    "inflated position": ("wait", {"reached": True, "position": f"1-9-{2**63}"}, "bad_wait", "beyond"),
    "landed without a number": (
        "landed",
        {"gtid_binlog_pos": "1-9-5", "in_flight_at_read_only": "3", "waited_ms": 1.0},
        "bad_read_only",
        "in_flight_at_read_only is '3'",
    ),
    "landed after an endless wait": (
        "landed",
        {"gtid_binlog_pos": "1-9-5", "in_flight_at_read_only": 0, "waited_ms": 1e300},
        "bad_read_only",
        "not a duration",
    ),
}


@pytest.mark.parametrize("lie", sorted(CHANGE_LIES))
async def test_lying_answers_to_an_operations_calls_are_the_nodes_protocol_error(app: FastAPI, lie: str) -> None:
    """What a node answers a read-only change or a wait is what an operation then acts on: a lie (a truthy string
    taken for true, a position that is none) is a protocol error, never a success."""
    call, document, code, words = CHANGE_LIES[lie]
    node = FakeNode(Answer.json(document))
    drivers: DriverFactory = app.state.drivers
    async with serving(node) as url:
        driver = drivers.for_address(ServerKind.ferry, url.removeprefix("http://"))
        with pytest.raises(ServerProtocolError) as refused:
            if call == "set_read_only":
                await driver.set_read_only(False)
            elif call == "wait":
                await driver.wait_for_position("1-9-5", 1.0)
            else:
                await driver.wait_commits_landed(1.0)
    assert refused.value.code == code and words in refused.value.message, refused.value
