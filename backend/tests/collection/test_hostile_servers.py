"""One bad server never blinds the collector: a server that answers its status poll with a malformed, out-of-bounds
or truncated document is recorded as erroring, with a reason naming the field it got wrong, and every other server —
of its cluster and of every other cluster — is recorded in the same cycle; the after-cycle hooks (the failover
monitor, fencing) run after every cycle, even one that failed. The liars are fake ferryd admin APIs on real ports
(`hostile_servers`); the honest servers are a real ferryd cluster."""

from __future__ import annotations

import asyncio
import os
import resource
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import certifi
import httpx
import pytest
from fastapi import FastAPI

from ferry_control.core.db import session_scope
from ferry_control.core.untrusted_text import STORED_TEXT_MAX
from ferry_control.drivers.base import IoState, Positions, ReplicaConnection, ServerStatus, SqlState
from ferry_control.drivers.errors import ServerProtocolError
from ferry_control.drivers.mariadb.connection import MariadbConnections, PoolSettings
from ferry_control.models import ServerKind
from ferry_control.schemas.events import PositionEvent
from ferry_control.services.collection.polling import PollOutcome, PollTarget
from ferry_control.services.collection.recording import Recorder
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster, free_port_pair
from tests.helpers import register
from tests.hostile_servers import (
    Answer,
    FakeNode,
    FakeSqlServer,
    connection,
    hostile_answers,
    serving,
    valid_status,
)
from tests.mariadb_cluster import eventually

#: The status document of the report that found the bug: a connection that is a string, not an object.
PROBE = {"server_id": 9, "read_only": False, "gtid_binlog_pos": "", "gtid_current_pos": "", "replication": ["x"]}

#: Lies, each with the words its server's error must contain (what was wrong, and where).
LIES: dict[str, tuple[Answer, str]] = {
    "probe": (Answer.json(PROBE), "replication[0]: is 'x', not an object"),
    "replication not a list": (Answer.json(valid_status(replication="x")), "replication is 'x', not a list"),
    "a list, not a document": (Answer.json([1, 2]), "the document is [1, 2], not an object"),
    "position not text": (Answer.json(valid_status(gtid_binlog_pos=5)), "gtid_binlog_pos is 5, not a string"),
    "missing field": (Answer.json({"server_id": 9}), "lacks 'read_only'"),
    "read_only not a boolean": (Answer.json(valid_status(read_only="no")), "read_only is 'no', not a boolean"),
    "negative server_id": (Answer.json(valid_status(server_id=-1)), "server_id -1, outside 0..4294967295"),
    "huge server_id": (Answer.json(valid_status(server_id=2**40)), "server_id 1099511627776, outside"),
    "connection name too long": (
        Answer.json(valid_status(replication=[connection(name="n" * 65)])),
        "connection name of 65 characters (at most 64)",
    ),
    "master address too long": (
        Answer.json(valid_status(replication=[connection(master="h" * 301)])),
        "master address of connection 'main' of 301 characters (at most 300)",
    ),
    "lag not a number": (
        Answer.json(valid_status(replication=[connection(lag={"1": {"transactions": 0, "seconds": float("nan")}})])),
        "lag in seconds nan for connection 'main', domain 1",
    ),
    "lag not an object": (
        Answer.json(valid_status(replication=[connection(lag={"1": "x"})])),
        "replication[0]: lag of domain '1' is 'x', not an object",
    ),
    "unknown io state": (
        Answer.json(valid_status(replication=[connection(io_state="dancing")])),
        "replication[0]: 'dancing' is not a valid IoState",
    ),
    "seq_no past BIGINT": (
        Answer.json(valid_status(gtid_binlog_pos=f"1-9-{2**63}", gtid_current_pos=f"1-9-{2**63}")),
        "seq_no 9223372036854775808 is beyond 9223372036854775807",
    ),
    "error side unknown": (
        Answer.json(valid_status(replication=[connection(last_error={"side": "zz", "code": "X", "message": "m"})])),
        "error side 'zz' for connection 'main' (io or sql)",
    ),
    "semi_sync not an object": (Answer.json(valid_status(semi_sync="on")), "semi_sync is 'on', not an object"),
    "replicas entry not an object": (Answer.json(valid_status(replicas=[7])), "replicas[0]: is 7, not an object"),
    "not JSON": (Answer(body=b"<html>"), "without JSON"),
    "truncated": (Answer(body=b'{"server_id": 9', truncated=True), "/v1/status"),
}


@asynccontextmanager
async def liars(client: httpx.AsyncClient, answers: dict[str, Answer]) -> AsyncIterator[tuple[int, dict[str, int]]]:
    """A cluster `liars` of fake nodes, one per answer, served while the context lasts; yields the cluster's id
    and each fake's registered id by its name."""
    response = await client.post("/api/v1/clusters", json={"name": "liars"})
    assert response.status_code == 201, response.text
    cluster_id = response.json()["id"]
    ids = {}
    taken: set[int] = set()  # nothing listens on a liar's protocol port: the system may hand it out again
    async with AsyncExitStack() as stack:
        for index, (name, answer) in enumerate(answers.items()):
            url = await stack.enter_async_context(serving(FakeNode(answer)))
            taken.add(int(url.rsplit(":", 1)[1]))
            protocol_port = next(p for p, _ in iter(free_port_pair, None) if p not in taken)
            taken.add(protocol_port)
            response = await client.post(
                f"/api/v1/clusters/{cluster_id}/servers",
                json={"name": f"liar-{index}", "host": "127.0.0.1", "protocol_port": protocol_port,
                      "admin_port": int(url.rsplit(":", 1)[1])},
            )  # fmt: skip
            assert response.status_code == 201, response.text
            ids[name] = response.json()["id"]
        yield cluster_id, ids


async def servers_of(client: httpx.AsyncClient, cluster_id: int) -> dict[int, dict[str, Any]]:
    return {s["id"]: s for s in (await client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()}


async def test_the_reported_probe_leaves_every_other_cluster_cycling_and_names_the_bad_field(
    live_app: LiveFactory, ferryd: FerrydCluster
) -> None:
    """The collector's own loop, with the lying server of the report beside a real cluster: cycles keep finishing,
    the real cluster's positions keep moving, the hooks run after every cycle, and the liar says what it got
    wrong."""
    async with live_app(poll_interval_s=0.2) as live:
        client, collector = live.client, live.app.state.collector
        honest_id, honest = await register(client, ferryd)
        hooks_run = 0

        async def count_hook(_clusters: set[int] | None = None) -> None:
            nonlocal hooks_run
            hooks_run += 1

        collector.after_cycle.append(count_hook)
        async with liars(client, {"probe": Answer.json(PROBE)}) as (liars_id, liar):
            collector.start()
            try:
                gtid = ferryd.master.increment("hostile", "k", domain=1)
                caught_up = ferryd.converge()
                assert gtid in caught_up

                async def honest_cluster_recorded() -> bool:
                    servers = await servers_of(client, honest_id)
                    return all(servers[i]["gtid_current_pos"] == caught_up for i in honest.values())

                await eventually("the honest cluster's new positions recorded beside the liar", honest_cluster_recorded)
                cycles, hooks = collector.cycles, hooks_run
                await eventually("two more cycles with their hooks", lambda: collector.cycles >= cycles + 2
                                 and hooks_run >= hooks + 2)  # fmt: skip
            finally:
                await collector.stop()
        liar_row = (await servers_of(client, liars_id))[liar["probe"]]
        assert "replication[0]: is 'x', not an object" in liar_row["last_error"], liar_row
        assert liar_row["gtid_current_pos"] is None, "nothing of the lying answer is stored"
        assert all(s["health"] == "healthy" for s in (await servers_of(client, honest_id)).values())


async def test_every_kind_of_lie_is_the_liars_error_alone_naming_what_was_wrong(
    app: FastAPI, client: httpx.AsyncClient, ferryd: FerrydCluster
) -> None:
    honest_id, honest = await register(client, ferryd)
    caught_up = ferryd.converge()
    async with liars(client, {name: answer for name, (answer, _) in LIES.items()}) as (liars_id, ids):
        report = await app.state.collector.run_cycle()
        recorded = await servers_of(client, liars_id)
        honest_errors = {i: row["last_error"] for i, row in (await servers_of(client, honest_id)).items()}
        assert (report.polled, report.failed) == (3 + len(LIES), len(LIES)), honest_errors
    for name, (_, words) in LIES.items():
        row = recorded[ids[name]]
        assert row["last_error"] and words in row["last_error"], f"{name}: {row['last_error']!r}"
        assert row["gtid_current_pos"] is None, f"{name}: nothing of a lying answer is stored"
    servers = await servers_of(client, honest_id)
    assert all(
        servers[i]["health"] == "healthy" and servers[i]["gtid_current_pos"] == caught_up for i in honest.values()
    )
    topology = (await client.get(f"/api/v1/clusters/{honest_id}/topology")).json()
    assert {e["replica_registered_server_id"] for e in topology["edges"]} == {honest["replica1"], honest["replica2"]}


def _status(server_id: int, connection_name: str) -> ServerStatus:
    position = f"1-{server_id}-5"
    return ServerStatus(
        server_id=server_id,
        read_only=True,
        positions=Positions(binlog=position, slave=position, current=position),
        connections=(
            ReplicaConnection(
                name=connection_name,
                master_address="127.0.0.1:1",
                running=True,
                io_state=IoState.connected,
                sql_state=SqlState.waiting_for_relay,
                received_position=position,
                applied_position=position,
                master_position=position,
                lag={},
                last_error=None,
            ),
        ),  # fmt: skip
        replicas=(),
    )


async def test_an_answer_the_database_refuses_is_recorded_as_that_servers_failure_only(
    app: FastAPI, client: httpx.AsyncClient, settings: Any
) -> None:
    """Past validation (here: by calling the recorder directly), a value the database refuses — a connection name
    longer than its column — rolls back that server's part only: it is recorded as a failed poll naming why, and
    the other server of the same cluster, recorded after it, keeps its observation and its link."""
    async with liars(client, {"a": Answer(), "b": Answer()}) as (cluster_id, ids):
        outcomes = []
        for name, connection_name in (("a", "n" * 65), ("b", "main")):
            target = PollTarget(ids[name], cluster_id, ServerKind.ferry, f"fake-{name}:1", None)
            outcomes.append(PollOutcome(target, _status(ids[name], connection_name), None, datetime.now(UTC)))
        async with session_scope(app.state.sessionmaker) as session:
            events = await Recorder(settings).record(session, outcomes)
        servers = await servers_of(client, cluster_id)
        topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
    refused, recorded = servers[ids["a"]], servers[ids["b"]]
    assert "its replication links could not be recorded" in refused["last_error"], refused
    assert recorded["last_error"] is None and recorded["gtid_current_pos"] == f"1-{ids['b']}-5"
    assert [(e["replica_registered_server_id"], e["connection"]) for e in topology["edges"]] == [(ids["b"], "main")]
    assert any(isinstance(e.data, PositionEvent) and e.data.registered_server_id == ids["b"] for e in events)


async def test_the_hooks_run_after_a_cycle_that_failed(live_app: LiveFactory) -> None:
    """A cycle that cannot record (here the recorder raises) still runs the failover monitor and fencing."""
    async with live_app(poll_interval_s=0.2) as live:
        collector = live.app.state.collector
        hooks_run = 0

        async def count_hook(_clusters: set[int] | None = None) -> None:
            nonlocal hooks_run
            hooks_run += 1

        async def failing_record(*_: Any) -> list[Any]:
            raise RuntimeError("the record of this cycle failed")

        collector.after_cycle.append(count_hook)
        async with liars(live.client, {"honest": Answer.json(valid_status())}):
            collector._recorder.record = failing_record
            collector.start()
            try:
                await eventually("three hooks run after failed cycles", lambda: hooks_run >= 3)
            finally:
                await collector.stop()
        assert collector.cycles == 0, "no cycle finished: each one failed to record"


#: Cases of the seeded harness per run (FERRY_HOSTILE_CASES; the seed is FERRY_HOSTILE_SEED, default the date's).
HOSTILE_CASES = int(os.environ.get("FERRY_HOSTILE_CASES", "200"))
HOSTILE_SEED = int(os.environ.get("FERRY_HOSTILE_SEED", "20261126"))
#: How much this process's peak memory may grow over the whole harness (huge answers of 5 and 20 MiB included;
#: the driver reads at most node_answer_bytes_max of each).
MEMORY_GROWTH_MAX_MIB = 128


@pytest.mark.long
async def test_hostile_answers_never_stop_the_honest_cluster_and_each_names_what_was_wrong(
    live_app: LiveFactory, ferryd: FerrydCluster
) -> None:
    """The seeded harness: one fake node answers each of HOSTILE_CASES hostile answers in turn (mutated documents,
    truncated, not JSON, error statuses, huge, slow, never-ending) beside a real cluster. After every cycle the
    honest cluster is recorded as it is, the liar is either recorded (an answer that happened to be valid) or
    erroring with a reason in words, and memory stays bounded."""
    node = FakeNode()
    async with live_app(poll_timeout_s=0.5, node_read_timeout_s=0.5) as live:
        client, collector = live.client, live.app.state.collector
        honest_id, honest = await register(client, ferryd)
        async with serving(node) as url:
            response = await client.post("/api/v1/clusters", json={"name": "liars"})
            liars_id = response.json()["id"]
            protocol_port, _ = free_port_pair()
            response = await client.post(f"/api/v1/clusters/{liars_id}/servers", json={
                "name": "liar", "host": "127.0.0.1", "protocol_port": protocol_port,
                "admin_port": int(url.rsplit(":", 1)[1])})  # fmt: skip
            liar_id = response.json()["id"]
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            kinds: dict[str, int] = {}
            for label, answer in hostile_answers(HOSTILE_SEED, HOSTILE_CASES):
                node.answer = answer
                caught_up = ferryd.master.status()["gtid_binlog_pos"]
                report = await collector.run_cycle()
                assert report.polled == 4, label
                servers = {**await servers_of(client, honest_id), **await servers_of(client, liars_id)}
                for server_id in honest.values():
                    assert servers[server_id]["health"] == "healthy", (label, servers[server_id])
                assert servers[honest["master"]]["gtid_binlog_pos"] == caught_up, label
                liar = servers[liar_id]
                if report.failed:
                    error = liar["last_error"]
                    assert error and len(error) <= STORED_TEXT_MAX and error.isprintable(), (label, error)
                kind = label.split(": ", 1)[1]
                kinds[kind] = kinds.get(kind, 0) + 1
            grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert set(kinds) >= {"mutated document", "truncated", "not JSON", "huge"}, kinds
    assert grown_mib < MEMORY_GROWTH_MAX_MIB, f"peak memory grew by {grown_mib:.0f} MiB over the harness"


async def test_a_hostile_sql_server_is_that_servers_error_alone(live_app: LiveFactory, ferryd: FerrydCluster) -> None:
    """A MariaDB-kind server that answers garbage, a truncated or endless greeting, nothing, or closes at once:
    each poll ends in that server's error, the real cluster beside it recorded as usual."""
    async with live_app(poll_timeout_s=1.0) as live:
        client, collector = live.client, live.app.state.collector
        honest_id, honest = await register(client, ferryd)
        response = await client.post("/api/v1/clusters", json={
            "name": "sql-liars", "db_user": "ferry", "db_password": "not-a-real-password",
            "replication_user": "repl", "replication_password": "not-a-real-password"})  # fmt: skip
        assert response.status_code == 201, response.text
        liars_id = response.json()["id"]
        async with AsyncExitStack() as stack:
            ids = {}
            for mode in FakeSqlServer.MODES:
                fake = await stack.enter_async_context(FakeSqlServer(mode))
                response = await client.post(f"/api/v1/clusters/{liars_id}/servers", json={
                    "name": mode, "kind": "mariadb", "host": "127.0.0.1", "protocol_port": fake.port,
                    "admin_port": fake.port})  # fmt: skip
                assert response.status_code == 201, response.text
                ids[mode] = response.json()["id"]
            report = await collector.run_cycle()
        assert (report.polled, report.failed) == (3 + len(FakeSqlServer.MODES), len(FakeSqlServer.MODES))
        servers = await servers_of(client, liars_id)
        for mode, server_id in ids.items():
            assert servers[server_id]["last_error"], (mode, servers[server_id])
        recorded = await servers_of(client, honest_id)
        assert all(recorded[i]["health"] == "healthy" for i in honest.values())


async def test_a_slow_server_bounds_an_interleavings_read_and_concurrent_heavy_reads_are_capped(
    live_app: LiveFactory,
) -> None:
    """A server that takes longer than heavy_read_timeout_s to answer its binlog read is that read's error alone;
    while one such read is in progress, the same token's next one is refused with a 429 naming the bound
    (heavy_reads_per_token_max), rather than queued."""
    node = FakeNode(Answer.json({"events": [], "next_before": None}, delay_s=30.0))
    async with live_app(heavy_read_timeout_s=1.0, heavy_reads_per_token_max=1) as live:
        async with serving(node) as url:
            cluster_id = (await live.client.post("/api/v1/clusters", json={"name": "slow"})).json()["id"]
            protocol_port, _ = free_port_pair()
            await live.client.post(f"/api/v1/clusters/{cluster_id}/servers", json={
                "name": "slow", "host": "127.0.0.1", "protocol_port": protocol_port,
                "admin_port": int(url.rsplit(":", 1)[1])})  # fmt: skip
            path = f"/api/v1/clusters/{cluster_id}/interleavings"
            first = asyncio.create_task(live.client.get(path))
            await eventually("the first read to reach the slow server", lambda: node.requests > 0)
            second = await live.client.get(path)
            assert second.status_code == 429, second.text
            error = second.json()["error"]
            assert error["code"] == "too_many_concurrent_reads" and error["details"]["per"] == "token", error
            answer = await first
            assert answer.status_code == 200, answer.text
            (server,) = answer.json()["servers"]
            assert "no answer within 1.0 s (heavy_read_timeout_s)" in server["error"], server
            assert (await live.client.get(path)).status_code == 200, "the bound is free again once it answered"


def _pool_settings(port: int, *, tls_ca_file: str | None = None) -> PoolSettings:
    return PoolSettings(
        host="127.0.0.1", port=port, user="ferry", password=PASSWORD, tls_ca_file=tls_ca_file, tls_ca=None,
        connect_timeout_s=5.0, statement_timeout_s=5.0, connections_max=1,
    )  # fmt: skip


#: A password that must never be seen by a server that asks for it in clear.
PASSWORD = "never-in-clear-5b1e"


@pytest.mark.parametrize("mode", ["clear_text", "switch_to_clear"])
async def test_a_server_asking_for_the_password_in_clear_without_tls_gets_only_a_scramble(mode: str) -> None:
    """Announced in the greeting or asked for by an authentication switch, mysql_clear_password without TLS is
    refused with a message naming it, and the password is nowhere in what the server received."""
    async with FakeSqlServer(mode) as fake:
        pool = MariadbConnections(f"127.0.0.1:{fake.port}", _pool_settings(fake.port))
        with pytest.raises(ServerProtocolError) as refused:
            await pool.connect()
        await eventually("the fake server to have read the client's answer", lambda: len(fake.received) > 4)
    assert refused.value.code == "insecure_authentication"
    assert "'mysql_clear_password' authentication without TLS" in refused.value.message
    assert PASSWORD.encode() not in fake.received
    assert b"mysql_native_password" in fake.received, "the client answered with the scramble's method"


async def test_a_configured_ca_is_not_dropped_by_a_server_that_offers_no_tls() -> None:
    async with FakeSqlServer("no_tls") as fake:
        pool = MariadbConnections(f"127.0.0.1:{fake.port}", _pool_settings(fake.port, tls_ca_file=certifi.where()))
        with pytest.raises(ServerProtocolError) as refused:
            await pool.connect()
    assert refused.value.code == "insecure_authentication"
    assert "does not offer TLS" in refused.value.message
    assert fake.received == b"", "not even the user name was sent"
