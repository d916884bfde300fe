"""A rejoin that rewinds, against a real three-node ferryd cluster under a two-domain writer: the old master holds
transactions the new master never had (written while its replicas were stopped); after the failover, the rejoin
refuses and lists them; asked to rewind, its dry run lists exactly those GTIDs and changes nothing; the real run cuts
exactly them, the archive is stored and downloadable through the API (its binlog read back with ferry_engine: the
cut GTIDs, nothing else), the old master replicates from the new master with the same checksums, and nothing
acknowledged is lost; an archive the control plane cannot keep fails the rejoin naming it (the node keeps it).
A viewer gets 403 on the archives, an unknown archive 404; the MariaDB driver refuses a
rewind saying why; ferryctl rejoin --rewind prints what is (would be) cut and the archive."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import ferry_engine
import pytest

from ferry_control.ctl.errors import ExitCode
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from ferry_control.drivers.mariadb.config import MariadbCredentials, MariadbDriverConfig
from ferry_control.drivers.mariadb.driver import MariadbDriver
from ferry_control.drivers.mariadb.rewind import REWIND_REFUSAL
from ferry_control.services.orchestrator import rewind as rewind_module
from tests.cli.test_ferryctl import ferryctl
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import LOAD_FIELD, LOAD_TABLE, WAIT_S, LoadWriter, register, run_operation, serve, topology
from tests.operations.test_rejoin import fenced
from tests.waiting import eventually

#: A ferry binlog file's first bytes, and its events' types (ferry-core's binlog format).
BINLOG_MAGIC = b"\xfeFBL"
GTID_EVENT, COMMIT_EVENT = 3, 5


def archived_gtids(content: bytes) -> list[str]:
    """The GTIDs of the transactions in a rewind archive, each transaction's events checked and decoded by
    ferry_engine (every event's checksum, a GTID event first, a commit event last)."""
    assert content.startswith(BINLOG_MAGIC), content[:8]
    offset, current, start, gtids = len(BINLOG_MAGIC), b"", 0, []
    while offset < len(content):
        (body_len,) = struct.unpack_from("<I", content, offset)
        end = offset + 5 + body_len + 4
        kind = content[offset + 4]
        if kind == GTID_EVENT:
            current, start = b"", offset
        if start:
            current += content[offset:end]
        if kind == COMMIT_EVENT:
            gtids.append(ferry_engine.decode_transaction("archive", end, current)["gtid"])
            start = 0
        offset = end
    assert offset == len(content), "the archive ends with a whole event"
    return gtids


def gtids_between(before: str, after: str, server_id: int) -> dict[int, list[str]]:
    """Per domain, the GTIDs `server_id` wrote from position `before` (excluded) to `after`."""
    old = {int(g.split("-")[0]): int(g.split("-")[2]) for g in before.split(",")}
    new = {int(g.split("-")[0]): int(g.split("-")[2]) for g in after.split(",")}
    return {d: [f"{d}-{server_id}-{s}" for s in range(old.get(d, 0) + 1, new[d] + 1)] for d in new if new[d] > old[d]}


async def test_a_rejoin_rewinds_what_only_the_old_master_has_archived_first_and_nothing_acknowledged_is_lost(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    old = ferryd.master
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operator, viewer = live.tokens.header("operator"), live.tokens.header("viewer")
        writer = await LoadWriter.start(ferryd.nodes, clients=4, domains=2)
        try:
            await eventually(
                "writes in 2 domains", lambda: len(old.status()["gtid_binlog_pos"].split(",")) == 2, WAIT_S,
                in_thread=True,
            )  # fmt: skip
            await writer.pause()
            ferryd.converge()
            # Acknowledged by the master, never replicated: what a failover's RPO pays without semi-sync.
            for replica in (ferryd.replica1, ferryd.replica2):
                replica.post("/v1/replication/main/stop", {})
            before = old.status()["gtid_binlog_pos"]
            after = ferryd.write(3, domains=(1, 2))
            only_old = gtids_between(before, after, old.server_id)
            assert [len(g) for g in only_old.values()] == [3, 3], only_old
            await live.app.state.collector.run_cycle()
            old.kill()
            failover = await run_operation(live.app, live.client, cluster_id, "failover", {})
            assert failover["state"] == "succeeded", (failover["error"], failover["steps"])
            new_id = failover["result"]["new_master_registered_server_id"]
            new = ferryd.replica1 if new_id == ids["replica1"] else ferryd.replica2
            await writer.resume()
            moved = new.status()["gtid_binlog_pos"]
            await eventually(
                "writes on the new master", lambda: new.status()["gtid_binlog_pos"] != moved, WAIT_S, in_thread=True
            )
            await writer.pause()
            old.start(same_ports=True)
            old.post("/v1/read-only", {"read_only": True})
            assert await fenced(live, cluster_id, ids["master"])
            unchanged = topology(ferryd.nodes), old.status()["gtid_binlog_pos"]

            refused = await run_operation(
                live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["master"]}
            )
            assert refused["state"] == "failed" and refused["result"]["failure"] == REFUSED, refused
            assert {d["domain"]: d["count"] for d in refused["result"]["only_here"]} == {1: 3, 2: 3}, refused

            rewind = {"registered_server_id": ids["master"], "resolve": "rewind"}
            dry = await run_operation(live.app, live.client, cluster_id, "rejoin", {**rewind, "dry_run": True})
            assert dry["state"] == "succeeded", (dry["error"], dry["steps"])
            cut = {d["domain"]: d["gtids"] for d in dry["result"]["rewind"]["cut"]}
            assert cut == only_old, (cut, only_old)
            assert dry["result"]["rewind"]["archive_id"] is None
            assert (topology(ferryd.nodes), old.status()["gtid_binlog_pos"]) == unchanged, "a dry run changes nothing"

            rejoin = await run_operation(live.app, live.client, cluster_id, "rejoin", rewind)
            assert rejoin["state"] == "succeeded", (rejoin["error"], rejoin["steps"])
            assert [s["name"] for s in rejoin["steps"]] == [
                "preflight", "pre_hooks", "read_only", "rewind", "archive", "replicate", "verify", "unfence",
            ]  # fmt: skip
            done = rejoin["result"]["rewind"]
            assert {d["domain"]: d["gtids"] for d in done["cut"]} == only_old, done
            assert rejoin["result"]["master_registered_server_id"] == new_id
            assert not await fenced(live, cluster_id, ids["master"])
            status = old.status()
            assert status["read_only"] is True
            assert [(c["name"], c["master"], c["running"]) for c in status["replication"]] == [
                ("main", new.listen, True)
            ]

            archives = f"/api/v1/clusters/{cluster_id}/archives"
            listed = await live.client.get(archives, headers=operator)
            assert listed.status_code == 200, listed.text
            [row] = listed.json()
            assert row["id"] == done["archive_id"] and row["operation_id"] == rejoin["id"], row
            assert row["registered_server_id"] == ids["master"] and row["name"] == done["archive_name"], row
            assert {d["domain"]: d["gtids"] for d in row["cut"]} == only_old, row
            download = await live.client.get(f"{archives}/{row['id']}", headers=operator)
            assert download.status_code == 200, download.text
            assert download.headers["content-type"] == "application/octet-stream"
            assert download.headers["content-disposition"] == f'attachment; filename="{row["name"]}"'
            assert len(download.content) == row["size_bytes"]
            assert archived_gtids(download.content) == [g for d in sorted(only_old) for g in only_old[d]]
            # The node keeps its own copy, byte for byte.
            assert old.get("/v1/rewind/archives")["archives"] == [row["name"]]

            for path in (archives, f"{archives}/{row['id']}"):
                denied = await live.client.get(path, headers=viewer)
                assert denied.status_code == 403, (path, denied.text)
            missing = await live.client.get(f"{archives}/{row['id'] + 1000}", headers=operator)
            assert missing.status_code == 404 and missing.json()["error"]["code"] == "rewind_archive_not_found"

            await writer.resume()
            moved = new.status()["gtid_binlog_pos"]
            await eventually(
                "writes after the rejoin", lambda: new.status()["gtid_binlog_pos"] != moved, WAIT_S, in_thread=True
            )
            summary = await writer.stop()
        finally:
            writer.kill()
    position = new.status()["gtid_binlog_pos"]
    old.wait_for(position)
    assert old.get("/v1/checksums")["tables"] == new.get("/v1/checksums")["tables"]
    async with await FerryProtocolClient.connect(old.listen) as connection:
        for key, acked in summary["acked"].items():
            row = await connection.get(LOAD_TABLE, key)
            value = 0 if row is None else row[LOAD_FIELD]
            assert acked <= value <= acked + summary["unknown"].get(key, 0), (key, acked, value, summary["unknown"])


async def test_a_rejoin_asked_to_rewind_a_server_with_nothing_only_it_has_just_rejoins(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        ferryd.master.kill()
        failover = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert failover["state"] == "succeeded", (failover["error"], failover["steps"])
        ferryd.master.start(same_ports=True)
        ferryd.master.post("/v1/read-only", {"read_only": True})
        rejoin = await run_operation(
            live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["master"], "resolve": "rewind"}
        )
        assert rejoin["state"] == "succeeded", (rejoin["error"], rejoin["steps"])
        assert "rewind" not in [s["name"] for s in rejoin["steps"]] and rejoin["result"]["rewind"] is None
        listed = await live.client.get(f"/api/v1/clusters/{cluster_id}/archives", headers=live.tokens.header("admin"))
        assert listed.status_code == 200 and listed.json() == [], listed.text
        bad = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/operations/rejoin",
            json={"registered_server_id": ids["master"], "resolve": "forget"},
        )
        assert bad.status_code == 422 and "resolve" in bad.text, bad.text


async def test_the_mariadb_driver_refuses_a_rewind_saying_why() -> None:
    login = MariadbCredentials("ferry", "unused")
    driver = MariadbDriver("127.0.0.1:1", MariadbDriverConfig(admin=login, replication=login))
    try:
        for call in (driver.rewind("0-1-5", dry_run=True), driver.download_rewind_archive("rewind-x.bin", 10)):
            with pytest.raises(DriverError) as refused:
                await call
            assert refused.value.kind is ErrorKind.unsupported and refused.value.code == "rewind_unsupported"
            assert refused.value.message == REWIND_REFUSAL
            assert "binlog_row_image=FULL is not built" in REWIND_REFUSAL
    finally:
        await driver.aclose()


async def test_ferryctl_rejoin_rewind_prints_what_is_cut_and_the_archive(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    old = ferryd.master
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd, name="orders")
        for replica in (ferryd.replica1, ferryd.replica2):
            replica.post("/v1/replication/main/stop", {})
        before = old.status()["gtid_binlog_pos"]
        only_old = gtids_between(before, ferryd.write(2, domains=(1, 2)), old.server_id)
        await live.app.state.collector.run_cycle()
        old.kill()
        failover = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert failover["state"] == "succeeded", (failover["error"], failover["steps"])
        old.start(same_ports=True)
        old.post("/v1/read-only", {"read_only": True})
        async with serve(live.app) as url:
            token = live.tokens.operator
            dry = await ferryctl(tmp_path, "rejoin", "orders", "--server", "master", "--rewind", "--dry-run", "--wait",
                                 url=url, token=token)  # fmt: skip
            assert dry.code == ExitCode.ok, (dry.out, dry.err)
            for domain, gtids in only_old.items():
                assert f"domain {domain}: would cut 2 transaction(s), {gtids[0]} … {gtids[1]}" in dry.out, dry.out
            assert old.status()["replication"] == [] and old.get("/v1/rewind/archives")["archives"] == []
            run = await ferryctl(tmp_path, "rejoin", "orders", "--server", "master", "--rewind", "--wait",
                                 url=url, token=token)  # fmt: skip
            assert run.code == ExitCode.ok, (run.out, run.err)
            for domain, gtids in only_old.items():
                assert f"domain {domain}: cut 2 transaction(s), {gtids[0]} … {gtids[1]}" in run.out, run.out
            [archive] = (await live.client.get(f"/api/v1/clusters/{cluster_id}/archives")).json()
            assert f"archive {archive['id']} ({archive['name']})" in run.out, run.out
    assert [c["running"] for c in old.status()["replication"]] == [True]


async def test_an_archive_that_cannot_be_kept_fails_the_rejoin_naming_it_and_the_node_keeps_it(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive is larger than the control plane keeps (its bound lowered to 64 bytes): the rewind is done, the
    download refused, and the operation fails saying so, naming the archive the node keeps; nothing is stored, the
    server stays read-only, replicating from nobody and fenced. A rejoin afterwards has nothing to cut."""
    monkeypatch.setattr(rewind_module, "ARCHIVE_BYTES_MAX", 64)
    ferryd = ferryd_factory(read_only_replicas=True)
    old = ferryd.master
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        for replica in (ferryd.replica1, ferryd.replica2):
            replica.post("/v1/replication/main/stop", {})
        before = old.status()["gtid_binlog_pos"]
        only_old = gtids_between(before, ferryd.write(2, domains=(1, 2)), old.server_id)
        await live.app.state.collector.run_cycle()
        old.kill()
        failover = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert failover["state"] == "succeeded", (failover["error"], failover["steps"])
        old.start(same_ports=True)
        old.post("/v1/read-only", {"read_only": True})
        failed = await run_operation(
            live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["master"], "resolve": "rewind"}
        )
        assert failed["state"] == "failed", failed
        assert [(s["name"], s["state"]) for s in failed["steps"]][-2:] == [("rewind", "passed"), ("archive", "failed")]
        [name] = old.get("/v1/rewind/archives")["archives"]
        error = failed["error"]
        assert f"its archive {name} could not be downloaded" in error and "over the 64-byte bound" in error, error
        assert f"archived on master (server_id {old.server_id}) as {name}" in error and "nothing is lost" in error
        failure = failed["result"]["failure"]
        assert failure["changed"] is True and any(name in line for line in failure["left"]), failure
        rewind = failed["result"]["rewind"]
        assert {d["domain"]: d["gtids"] for d in rewind["cut"]} == only_old and rewind["archive_id"] is None, rewind
        admin = live.tokens.header("admin")
        assert (await live.client.get(f"/api/v1/clusters/{cluster_id}/archives", headers=admin)).json() == []
        status = old.status()
        assert status["read_only"] is True and status["replication"] == [], status
        assert await fenced(live, cluster_id, ids["master"])
        again = await run_operation(
            live.app, live.client, cluster_id, "rejoin", {"registered_server_id": ids["master"]}
        )
        assert again["state"] == "succeeded", (again["error"], again["steps"])
        assert again["result"]["only_here"] == []
