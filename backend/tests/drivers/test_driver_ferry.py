"""The ferry driver against real nodes: what it reads, what it changes, and each refusal mapped to a typed
error carrying the node's code and message."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ferry_control.core.config import Settings
from ferry_control.drivers.base import SEMI_SYNC_FALLEN_BACK, ChangeMaster, IoState, ReplicaConnection, SqlState
from ferry_control.drivers.credentials import ServerCredentials
from ferry_control.drivers.errors import (
    DriverError,
    ErrorKind,
    ServerBadRequest,
    ServerConflict,
    ServerNotFound,
    ServerUnauthorized,
    ServerUnreachable,
    WriteOutcomeUnknown,
)
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.ferry import status_warnings
from ferry_control.models import ServerKind
from ferry_control.services.orchestrator.gtid import position
from tests.ferryd_cluster import NODE_TOKEN, WAIT_S, FerrydCluster, FerrydNode
from tests.helpers import serve
from tests.mariadb_cluster import eventually


@pytest.fixture
async def drivers(settings: Settings):  # type: ignore[no-untyped-def]
    factory = DriverFactory(settings)
    yield factory
    await factory.aclose()


async def test_status_positions_connections_and_replicas(drivers: DriverFactory, ferryd: FerrydCluster) -> None:
    position = ferryd.converge()
    master = drivers.for_address(ServerKind.ferry, ferryd.master.admin)
    replica = drivers.for_address(ServerKind.ferry, ferryd.replica1.admin)
    status = await master.status()
    assert (status.server_id, status.positions.binlog, status.failure) == (1, position, None)
    assert sorted(r.server_id for r in status.replicas) == [2, 3]
    assert (await replica.positions()).current == position
    (connection,) = await replica.replica_connections()
    assert (connection.name, connection.master_address, connection.io_state) == (
        "main",
        ferryd.master.listen,
        IoState.connected,
    )
    assert all(lag.transactions == 0 for lag in connection.lag.values())
    assert sorted(r.server_id for r in await master.connected_replicas()) == [2, 3]


async def test_a_node_sending_before_its_binlog_is_durable_says_its_replicas_may_be_ahead(
    drivers: DriverFactory, ferryd: FerrydCluster, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    # Durability local (the default): each commit group is fsynced before the dump threads send it.
    assert (await drivers.for_address(ServerKind.ferry, ferryd.master.admin).status()).replicas_may_be_ahead is False
    unsynced = ferryd_factory(master_args=("--durability", "none"))
    assert (await drivers.for_address(ServerKind.ferry, unsynced.master.admin).status()).replicas_may_be_ahead is True


async def test_a_connection_at_its_relay_space_limit_reads_as_waiting_for_relay_space(
    drivers: DriverFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    cluster = ferryd_factory()
    # The smallest relay log space a node takes (4 KiB) and an applier that does not run: the relay log fills.
    replica = FerrydNode(tmp_path / "bounded", 9, ("--read-only", "--relay-log-space-bytes-max", "4096"))
    replica.start()
    try:
        replica.post("/v1/replication/m/change-master", {"master": cluster.master.listen})
        replica.post("/v1/replication/m/start", {"sql_paused": True})
        for i in range(200):
            cluster.master.increment("relay_space", f"k{i}")
        driver = drivers.for_address(ServerKind.ferry, replica.admin)

        async def connection(waiting: bool) -> ReplicaConnection | None:
            (c,) = (await driver.status()).connections
            return c if c.waiting_for_relay_space is waiting else None

        full = await eventually("the receiving side to wait for relay log space", lambda: connection(True))
        assert full.io_state == IoState.connected and full.sql_state == SqlState.paused
        replica.post("/v1/replication/m/resume-sql", {})
        await eventually("the applier to free the space", lambda: connection(False))
        replica.wait_for(cluster.master.status()["gtid_binlog_pos"])
    finally:
        replica.stop()


async def test_domain_filters_and_heartbeat_are_reported_and_taken_back_with_the_connections_settings(
    drivers: DriverFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    cluster = ferryd_factory()
    replica = drivers.for_address(ServerKind.ferry, cluster.replica1.admin)
    await replica.stop_replication("main")
    (before,) = await replica.replica_connections()
    assert before.settings is not None and before.settings.filters == {}
    master = cluster.master.listen
    await replica.change_master(
        "main",
        ChangeMaster(
            master, settings=replace(before.settings, filters={"ignore_domain_ids": "2, 5"}, heartbeat_ms=250)
        ),
    )
    (after,) = await replica.replica_connections()
    assert after.settings is not None and after.settings.filters == {"ignore_domain_ids": "2,5"}
    assert (before.settings.heartbeat_ms, after.settings.heartbeat_ms) == (1000, 250)
    # What a repoint does: the settings as reported, taken back whole — the filter stays.
    await replica.change_master("main", ChangeMaster(master, settings=after.settings))
    assert (await replica.replica_connections())[0].settings == after.settings
    # A filter ferryd does not have is refused by name, before anything is sent.
    with pytest.raises(DriverError, match="not by replicate_do_db"):
        await replica.change_master(
            "main", ChangeMaster(master, settings=replace(after.settings, filters={"replicate_do_db": "app"}))
        )
    assert (await replica.replica_connections())[0].settings == after.settings

    await replica.start_replication("main")
    written = cluster.write(2, domains=(1, 2))
    cluster.replica1.wait_for(written)  # a filtered GTID still advances gtid_slave_pos
    status = await replica.status()
    logged = position(status.positions.binlog)
    assert logged.get(2) is None, f"domain 2 was passed over, not applied nor logged: {logged}"
    assert logged.get(1) is not None


def test_status_warnings_name_a_fallen_back_semi_sync_and_binlog_expiry_held_back_or_failing() -> None:
    assert status_warnings({"semi_sync": {"state": "on"}, "binlog_expiry": {"held_back": None}}) == ()
    held = {"held_back": {"file": "binlog.000007", "replica": "server 3 at 127.0.0.1:7303"}, "last_error": "EIO"}
    assert status_warnings({"semi_sync": {"state": "fallen_back"}, "binlog_expiry": held}) == (
        SEMI_SYNC_FALLEN_BACK,
        "binlog expiry keeps binlog.000007 (and what follows) for replica server 3 at 127.0.0.1:7303, which still "
        "reads it: the binlog grows until that replica moves on",
        "binlog expiry failed: EIO",
    )


async def test_a_network_durable_node_without_replicas_reports_semi_sync_fallen_back(
    drivers: DriverFactory, tmp_path: Path
) -> None:
    node = FerrydNode(
        tmp_path / "alone", 1, ("--durability", "network", "--semi-sync-replicas", "1", "--semi-sync-timeout-ms", "100")
    )
    node.start()
    try:
        driver = drivers.for_address(ServerKind.ferry, node.admin)
        assert (await driver.status()).warnings == ()
        node.increment()  # waits out the timeout: no replica acknowledges
        assert (await driver.status()).warnings == (SEMI_SYNC_FALLEN_BACK,)
    finally:
        node.stop()


async def test_events_checksums_and_wait(drivers: DriverFactory, ferryd: FerrydCluster) -> None:
    gtid = ferryd.master.increment("drv", "k", domain=1)
    position = ferryd.converge()
    master = drivers.for_address(ServerKind.ferry, ferryd.master.admin)
    replica = drivers.for_address(ServerKind.ferry, ferryd.replica2.admin)
    page = await master.recent_events(limit=1)
    assert [t.gtid for t in page.transactions] == [gtid] and page.transactions[0].tables == ("drv",)
    assert (await master.checksums()).tables == (await replica.checksums()).tables
    waited = await replica.wait_for_position(position, timeout_s=5)
    assert waited.reached and waited.position == position


async def test_read_only_round_trip(drivers: DriverFactory, ferryd: FerrydCluster) -> None:
    replica = drivers.for_address(ServerKind.ferry, ferryd.replica2.admin)
    try:
        assert await replica.set_read_only(True) is True
        assert (await replica.status()).read_only is True
    finally:
        assert await replica.set_read_only(False) is False


async def test_read_only_waiting_for_commits_in_flight_returns_where_writes_stopped(
    drivers: DriverFactory, ferryd: FerrydCluster
) -> None:
    replica = drivers.for_address(ServerKind.ferry, ferryd.replica2.admin)
    assert replica.counts_commits_in_flight
    try:
        stopped = await replica.wait_commits_landed(timeout_s=5)
        assert (stopped.in_flight_at_read_only, stopped.waited_s >= 0) == (0, True)
        status = await replica.status()
        assert status.read_only is True and stopped.position == status.positions.binlog
    finally:
        assert await replica.set_read_only(False) is False


async def test_refusals_carry_the_nodes_code_and_message(drivers: DriverFactory, ferryd: FerrydCluster) -> None:
    replica = drivers.for_address(ServerKind.ferry, ferryd.replica1.admin)
    with pytest.raises(ServerConflict) as running:
        await replica.change_master("main", ChangeMaster(master_address=ferryd.master.listen))
    assert (running.value.kind, running.value.code) == (ErrorKind.conflict, "conflict")
    with pytest.raises(ServerNotFound) as unknown:
        await replica.start_replication("nope")
    assert (unknown.value.kind, unknown.value.code) == (ErrorKind.not_found, "not_found")
    with pytest.raises(ServerBadRequest) as bad:
        await replica.start_replication("main", until="1-x-3")
    assert (bad.value.kind, bad.value.code) == (ErrorKind.bad_request, "bad_request") and "column" in bad.value.message


async def test_a_canary_write_on_a_read_only_node_is_refused_and_one_on_a_writable_node_acknowledged(
    drivers: DriverFactory, ferryd: FerrydCluster
) -> None:
    """What a drill's live canary writer tells apart: READ_ONLY is a refusal (nothing written), not a lost answer."""
    ferryd.replica1.post("/v1/read-only", {"read_only": True})
    replica = drivers.for_address(ServerKind.ferry, ferryd.replica1.admin)
    with pytest.raises(ServerConflict) as refused:
        await replica.write_canary(1, "refused", {"n": 1})
    assert (refused.value.kind, refused.value.code) == (ErrorKind.conflict, "READ_ONLY")
    assert not isinstance(refused.value, WriteOutcomeUnknown)
    master = drivers.for_address(ServerKind.ferry, ferryd.master.admin)
    gtid = await master.write_canary(1, "acknowledged", {"n": 2})
    ferryd.replica1.wait_for(gtid)
    assert await replica.read_canaries(["refused", "acknowledged"]) == {"refused": None, "acknowledged": {"n": 2}}


async def test_a_canary_write_whose_answer_is_lost_is_unknown_and_may_have_committed(
    drivers: DriverFactory, ferryd: FerrydCluster
) -> None:
    """Between the driver and the node, a relay that passes the request on and drops the node's answer (closing
    the client's connection): the write committed, and the driver says it cannot tell (`WriteOutcomeUnknown`)."""
    host, port = ferryd.master.listen.rsplit(":", 1)

    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        node_reader, node_writer = await asyncio.open_connection(host, int(port))
        try:
            node_writer.write(await client_reader.read(65536))  # the Transact frame
            await node_writer.drain()
            await node_reader.read(1)  # the node answered: the answer goes no further
        finally:
            node_writer.close()
            client_writer.close()

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    relay_address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server:
        driver = drivers.for_address(ServerKind.ferry, ferryd.master.admin, protocol_address=relay_address)
        with pytest.raises(WriteOutcomeUnknown) as unknown:
            await driver.write_canary(1, "answer-lost", {"n": 3})
    assert unknown.value.code == "canary_write_unknown"
    master = drivers.for_address(ServerKind.ferry, ferryd.master.admin)
    assert await master.read_canaries(["answer-lost"]) == {"answer-lost": {"n": 3}}


async def test_a_wrong_token_is_unauthorized_and_a_missing_one_is_refused_before_sending_for_reads_too(
    ferryd: FerrydCluster, database_url: str
) -> None:
    wrong = DriverFactory(Settings(database_url=database_url, node_token="x" * 20))
    none = DriverFactory(Settings(database_url=database_url))
    try:
        with pytest.raises(ServerUnauthorized) as refused:
            await wrong.for_address(ServerKind.ferry, ferryd.replica1.admin).set_read_only(False)
        assert refused.value.message == "wrong admin token"
        with pytest.raises(DriverError) as missing:
            await none.for_address(ServerKind.ferry, ferryd.replica1.admin).set_read_only(False)
        assert missing.value.code == "no_node_token"
        with pytest.raises(DriverError) as unread:
            await none.for_address(ServerKind.ferry, ferryd.replica1.admin).status()
        assert unread.value.code == "no_node_token", "reads carry the token too"
        with pytest.raises(ServerUnauthorized):
            await wrong.for_address(ServerKind.ferry, ferryd.replica1.admin).status()
    finally:
        await wrong.aclose()
        await none.aclose()


async def test_a_clusters_own_token_overrides_the_setting(ferryd: FerrydCluster, database_url: str) -> None:
    factory = DriverFactory(Settings(database_url=database_url, node_token="y" * 20))
    try:
        credentials = ServerCredentials(node_token=NODE_TOKEN)
        driver = factory.for_address(ServerKind.ferry, ferryd.replica1.admin, credentials)
        assert await driver.set_read_only(False) is False
    finally:
        await factory.aclose()


async def test_no_answer_is_unreachable_after_bounded_read_retries(database_url: str) -> None:
    factory = DriverFactory(
        Settings(database_url=database_url, node_token="z" * 20, node_read_retries_max=2, node_retry_backoff_s=0)
    )
    calls = 0

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal calls
        calls += 1  # a request arrived on a new connection: it gets no answer
        writer.close()

    listener = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    address = f"127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    try:
        with pytest.raises(ServerUnreachable):
            await factory.for_address(ServerKind.ferry, address).status()
        assert calls == 3, "one try and two retries"
        calls = 0
        with pytest.raises(ServerUnreachable):
            await factory.for_address(ServerKind.ferry, address).stop_replication("main")
        assert calls == 1, "changes are never retried"
        calls = 0
        with pytest.raises(ServerUnreachable):
            await factory.for_address(ServerKind.ferry, address).remove_replication("main")
        assert calls == 1, "nor a DELETE, which HTTP clients may resend on their own"
    finally:
        listener.close()
        await factory.aclose()


async def test_a_connection_paused_by_the_operator_reads_as_paused(
    drivers: DriverFactory, ferryd: FerrydCluster
) -> None:
    """ferryd's `sql_paused` start (the receiving side goes on, nothing is applied) is a state the driver knows, not
    an answer it cannot read."""
    replica = drivers.for_address(ServerKind.ferry, ferryd.replica2.admin)
    await replica.stop_replication("main")
    ferryd.replica2.post("/v1/replication/main/start", {"sql_paused": True})
    try:
        async with asyncio.timeout(WAIT_S):  # the receiving side connects, and the applying side pauses, on their own
            while (connection := (await replica.replica_connections())[0]).io_state != IoState.connected or (
                connection.sql_state != SqlState.paused
            ):
                await asyncio.sleep(0.05)
        assert (connection.io_state, connection.sql_state) == (IoState.connected, SqlState.paused)
        assert (await replica.status()).connections[0].sql_state == SqlState.paused
    finally:
        await replica.stop_replication("main")
        await replica.start_replication("main")


async def test_checksums_wait_out_a_node_busy_computing_them_for_another_caller(database_url: str) -> None:
    """ferryd computes one set of checksums at a time and answers another request meanwhile 429 `busy`: the driver
    asks again rather than failing the drill or check that wanted them."""
    answers = [429, 429, 200]

    async def node(scope: dict[str, Any], receive: Any, send: Any) -> None:
        status = answers.pop(0)
        body = (
            {"error": {"code": "busy", "message": "a checksum computation is already running on this node"}}
            if status == 429
            else {"position": "1-1-5", "tables": {"t": {"rows": 2, "checksum": 171}}}
        )
        await send(
            {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
        )
        await send({"type": "http.response.body", "body": json.dumps(body).encode()})

    factory = DriverFactory(Settings(database_url=database_url, node_token=NODE_TOKEN))
    try:
        async with serve(node) as url:
            driver = factory.for_address(ServerKind.ferry, url.removeprefix("http://"))
            checksums = await driver.checksums()
        assert checksums.position == "1-1-5" and checksums.tables["t"].rows == 2
        assert answers == [], "asked three times"
    finally:
        await factory.aclose()
