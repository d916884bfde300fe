"""The interleavings read against real ferryd nodes: each server's recent binlog with its position, and for each
(domain, origin) among the GTIDs shown, the servers that will never receive them and why — a connection filtering the
domain out, or a server not downstream of the origin at all — told apart from a server that only has not received
them yet; a server that does not answer is its own error while the others are shown. And against a real MariaDB: a
GTID range far back read from where it ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.drivers.base import ChangeMaster
from ferry_control.models import ServerKind
from ferry_control.models.base import utcnow
from ferry_control.repositories.samples import SampleRepository
from ferry_control.services.gtid_reach import ReachLink, ReachServer, never_reasons
from ferry_control.services.interleaving_window import READ_UNBOUNDED, behind, gtid_window, time_window
from ferry_control.services.interleavings import read_window
from tests.drivers.test_driver_mariadb import drivers, write
from tests.ferryd_cluster import FerrydCluster, FerrydNode, free_port_pair
from tests.helpers import register
from tests.mariadb_cluster import MariadbCluster


async def add_server(client: httpx.AsyncClient, cluster_id: int, name: str, protocol_port: int, admin_port: int) -> int:
    response = await client.post(
        f"/api/v1/clusters/{cluster_id}/servers",
        json={"name": name, "host": "127.0.0.1", "protocol_port": protocol_port, "admin_port": admin_port},
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def never_of(server: dict[str, Any]) -> dict[tuple[int, int], str]:
    return {(n["domain"], n["origin_server_id"]): n["reason"] for n in server["never"]}


async def test_interleavings_say_which_servers_will_never_receive_a_domain_and_why(
    app: FastAPI, client: httpx.AsyncClient, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    cluster = ferryd_factory(first_server_id=11)
    # replica1 filters domain 2 out of its only connection; a standalone node writes domain 5 that no one replicates.
    replica1 = app.state.drivers.for_address(ServerKind.ferry, cluster.replica1.admin)
    await replica1.stop_replication("main")
    (before,) = await replica1.replica_connections()
    assert before.settings is not None
    await replica1.change_master(
        "main",
        ChangeMaster(cluster.master.listen, settings=replace(before.settings, filters={"ignore_domain_ids": "2"})),
    )
    await replica1.start_replication("main")
    standalone = FerrydNode(tmp_path / "standalone", server_id=19)
    standalone.start()
    try:
        cluster.write(2, domains=(1, 2))
        standalone.increment("s", "k", domain=5)
        master_position = cluster.master.status()["gtid_binlog_pos"]
        cluster.replica2.wait_for(master_position)
        cluster.replica1.wait_for(next(g for g in master_position.split(",") if g.startswith("1-")))

        cluster_id, ids = await register(client, cluster)
        ids["standalone"] = await add_server(
            client, cluster_id, "standalone", standalone.protocol_port, standalone.admin_port
        )
        silent_port, silent_admin = free_port_pair()
        ids["silent"] = await add_server(client, cluster_id, "silent", silent_port, silent_admin)
        await app.state.collector.run_cycle()

        body = (await client.get(f"/api/v1/clusters/{cluster_id}/interleavings", params={"limit": 10})).json()
        servers = {s["registered_server_id"]: s for s in body["servers"]}

        # The one that does not answer is its own error; every other lane is there.
        assert "unreachable" in servers[ids["silent"]]["error"], servers[ids["silent"]]
        for role in ("master", "replica1", "replica2", "standalone"):
            assert servers[ids[role]]["error"] is None and servers[ids[role]]["transactions"], role

        # Filtered on its own connection: never domain 2, and the filter is named.
        assert list(never_of(servers[ids["replica1"]])) == [(2, 11), (5, 19)]
        assert never_of(servers[ids["replica1"]])[(2, 11)] == (
            "domain 2 does not reach it: replica1 (server_id 12)'s connection main filters it out (ignore_domain_ids)"
        )
        assert servers[ids["replica2"]]["position"] == {"1": 2, "2": 2}
        # Not downstream of the origin at all.
        assert list(never_of(servers[ids["master"]])) == [(5, 19)]
        assert "not downstream of standalone (server_id 19)" in never_of(servers[ids["master"]])[(5, 19)]
        assert list(never_of(servers[ids["standalone"]])) == [(1, 11), (2, 11)]
        assert list(never_of(servers[ids["replica2"]])) == [(5, 19)]
        # The origin itself, and a replica that receives everything from it, are never said to miss it.
        assert all((1, 11) not in never_of(servers[ids[r]]) for r in ("master", "replica1", "replica2"))
        # A server whose replication graph is unknown (never read) is not judged.
        assert servers[ids["silent"]]["never"] == []
    finally:
        standalone.stop()


def test_a_path_around_a_filter_still_delivers_and_an_unknown_master_is_not_judged() -> None:
    """Server 3 filters domain 2 on its connection to 1 but also replicates 2 from 2, a replica of 1 that lets it
    through: it receives domain 2. Server 4 streams from a master no one registered: it may receive anything; a server
    never read is not judged."""
    servers = [ReachServer(i, f"s{i}", i) for i in (1, 2, 3, 4, 5)]
    links = [
        ReachLink(2, 1, "a"),
        ReachLink(3, 1, "a", {"do_domain_ids": "1"}),
        ReachLink(3, 2, "b"),
        ReachLink(4, None, "x"),
        ReachLink(5, 1, "a", {"ignore_server_ids": "1"}),
    ]
    reasons = never_reasons([*servers, ReachServer(7, "never read", None)], links, 2, 1)
    assert set(reasons) == {5}
    assert reasons[5] == "domain 2 does not reach it: s5's connection a filters it out (ignore_server_ids)"
    assert never_reasons(servers, links, 2, 99) == {}, "an origin no registered server reports: nothing said"
    below_filter = never_reasons([*servers, ReachServer(6, "s6", 6)], [*links, ReachLink(6, 5, "c")], 2, 1)
    assert below_filter[6] == "domain 2 does not reach it: s5's connection a filters it out (ignore_server_ids)"


def listed(server: dict[str, Any]) -> list[str]:
    return [t["gtid"] for t in server["transactions"]]


async def test_a_window_by_gtid_range_or_by_time_lists_what_it_covers_and_says_who_is_behind(
    app: FastAPI,
    client: httpx.AsyncClient,
    ferryd_factory: Callable[..., FerrydCluster],
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    """A GTID range per domain lists exactly its transactions on every server; the last N seconds start after what
    the cluster had reached N seconds ago as the collector recorded it; a replica whose replication is stopped is
    behind the window's newest end by exactly the transactions it lacks (seq_nos), the master by none."""
    cluster = ferryd_factory(first_server_id=11)
    cluster.write(8, domains=(1, 2))
    cluster.converge()
    cluster_id, ids = await register(client, cluster)
    replica2 = app.state.drivers.for_address(ServerKind.ferry, cluster.replica2.admin)
    await replica2.stop_replication("main")
    cluster.write(3, domains=(1, 2))
    cluster.replica1.wait_for(cluster.master.status()["gtid_binlog_pos"])
    await app.state.collector.run_cycle()
    url = f"/api/v1/clusters/{cluster_id}/interleavings"

    # A GTID range: domain 1 from seq 3 to 6 (domain 2 not named: not listed).
    response = await client.get(url, params={"from": "1-11-3", "to": "1-11-6"})
    assert response.status_code == 200, response.text
    body = response.json()
    servers = {s["registered_server_id"]: s for s in body["servers"]}
    assert body["window"]["kind"] == "gtid" and body["window"]["domains"] == [1]
    for role in ("master", "replica1", "replica2"):
        assert listed(servers[ids[role]]) == ["1-11-6", "1-11-5", "1-11-4", "1-11-3"], role
        assert servers[ids[role]]["truncated"] is False
    assert body["window"]["newest"] == {"1": 6}, "the range's end"
    assert servers[ids["replica2"]]["behind"] == {}, "it has the whole range"

    # The newest transactions: replica2 lacks the last 3 of each domain; the master and replica1 lack none.
    body = (await client.get(url, params={"limit": 5})).json()
    servers = {s["registered_server_id"]: s for s in body["servers"]}
    assert body["window"] == {"kind": "count", "last_s": None, "limit": 5, "from_seq": {}, "to_seq": None,
                              "domains": None, "newest": {"1": 11, "2": 11}}  # fmt: skip
    assert servers[ids["replica2"]]["behind"] == {"1": 3, "2": 3}
    assert servers[ids["replica2"]]["reached"] == {"1": 8, "2": 8}
    assert servers[ids["master"]]["behind"] == {} and servers[ids["replica1"]]["behind"] == {}

    # The last 60 s: the cluster had reached 1-11-9 and 2-11-4 a minute and a half ago (as recorded then).
    async with session_scope(sessionmaker) as session:
        samples = SampleRepository(session)
        then = utcnow() - timedelta(seconds=90)
        samples.add_position(server_id=ids["master"], domain_id=1, gtid="1-11-9", seq_no=9, sampled_at=then)
        samples.add_position(server_id=ids["replica1"], domain_id=2, gtid="2-11-4", seq_no=4, sampled_at=then)
        await samples.write()
    body = (await client.get(url, params={"last_s": 60})).json()
    servers = {s["registered_server_id"]: s for s in body["servers"]}
    assert body["window"]["kind"] == "time" and body["window"]["from_seq"] == {"1": 10, "2": 5}
    # Newest first as the binlog holds them: the second write's domains 1 then 2, before them the first's domain 2.
    second, first = ["2-11-11", "2-11-10", "2-11-9", "1-11-11", "1-11-10"], ["2-11-8", "2-11-7", "2-11-6", "2-11-5"]
    assert listed(servers[ids["master"]]) == second + first
    assert listed(servers[ids["replica2"]]) == [f"2-11-{n}" for n in range(8, 4, -1)]
    assert servers[ids["replica2"]]["behind"] == {"1": 3, "2": 3}


async def test_a_malformed_or_contradictory_window_is_refused_precisely(
    client: httpx.AsyncClient, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    cluster = ferryd_factory(first_server_id=11)
    cluster_id, _ = await register(client, cluster)
    url = f"/api/v1/clusters/{cluster_id}/interleavings"
    cases = [
        ({"from": "1-11-5,2-11-x"}, "bad_gtid", "from: invalid GTID text \"1-11-5,2-11-x\" at column 13: expected "
         "seq_no (a decimal number), found 'x'"),
        ({"to": "1-11-5,1-12-6"}, "bad_gtid", "to: invalid GTID text \"1-11-5,1-12-6\" at column 8: domain 1 appears "
         "twice in the position"),
        ({"from": "1-11-9", "to": "1-11-5"}, "bad_range", "domain 1: from seq_no 9 is after to seq_no 5"),
        ({"from": ""}, "bad_range", "from/to: name at least one GTID (domain-server-seq)"),
        ({"last_s": 10, "to": "1-11-5"}, "window_conflict",
         "last_s and from/to: choose one window, by time or by GTID"),
    ]  # fmt: skip
    for params, code, message in cases:
        response = await client.get(url, params=params)
        assert response.status_code == 422, (params, response.text)
        assert response.json()["error"] == {"code": code, "message": message}, params
    for params in ({"last_s": 0}, {"last_s": 3601}, {"last_s": "ten"}):
        response = await client.get(url, params=params)
        assert response.status_code == 422 and "last_s" in response.text, (params, response.text)


def test_a_window_reads_as_far_as_its_start_in_each_domain_a_server_has_reached() -> None:
    """The window's arithmetic without servers: what it holds, which domains a server has transactions of in it,
    how many are left to read by seq_no, when a read has gone far enough, and behind per domain."""
    window = gtid_window("1-1-10,2-2-5", "1-1-20")
    assert [window.holds(1, s) for s in (9, 10, 20, 21)] == [False, True, True, False]
    assert window.holds(2, 99) and not window.holds(2, 4) and not window.holds(3, 1), "domain 3 is not named"
    assert window.needed({1: 30, 2: 4}) == {1}, "a server short of domain 2's start has none of it"
    assert window.left({1: 30, 2: 4}) == 21, "1-1-10 … 1-1-30, the ten above the end read and passed over"
    assert not window.read_far_enough({1: 11}, {1}) and window.read_far_enough({1: 10}, {1})
    assert window.newest([{1: 30, 2: 7}, {1: 12}]) == {1: 20, 2: 7}
    last = time_window(60, {1: 9})
    assert last.from_seq == {1: 10} and last.left({1: 12}) == 3
    assert last.left({1: 12, 2: 3}) == READ_UNBOUNDED, "domain 2 had no recorded position then: read to the bound"
    assert behind({1: 20, 2: 8}, {1: 17, 2: 8}, never=[]) == {1: 3}
    assert behind({1: 20, 2: 8}, {1: 17}, never=[2]) == {1: 3}, "never receiving domain 2 is not being behind in it"


async def test_a_gtid_range_far_back_in_a_mariadb_binlog_is_read_from_its_end_not_from_the_newest(
    mariadb: MariadbCluster,
) -> None:
    """A range 2,900 transactions back, asked with a bound of 100: read back from where the range ends (the driver's
    events_cursor_after), it is listed whole, not truncated. Read from the newest end, as it was, a read gives up
    after ten times its bound (1,000 transactions) with nothing of the range."""
    write(mariadb, 1, 3000)
    async with drivers(mariadb) as (master, *_):
        domain = (await master.recent_events(1)).transactions[0].domain
        newest = (await master.recent_events(1)).transactions[0].seq_no
        window = gtid_window(f"{domain}-1-100", f"{domain}-1-150")
        read = await read_window(master, window, 100, None, {domain: newest})
        assert not read.truncated
        assert sorted(t.seq_no for t in read.transactions) == list(range(100, 151))
