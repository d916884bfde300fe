"""The `rebuild` operation on real MariaDB 10.11 servers over a real sshd (a private `/usr/sbin/sshd` on a free
loopback port, with its own host key and the cluster's key authorised): a replica whose data directory was removed
is rebuilt from a donor replica with mariadb-backup while a load writer runs on the master, and afterwards replicates
from the right position (every acknowledged increment exactly once, checksums equal), with its progress moving in
`GET …/operations/{id}` while it ran; the copy pauses while its donor trails and goes on once it caught up; a
cancellation half-way leaves it stopped and marked; preflight refusals change
nothing; a rebuild left running by a dead API instance is reconciled leaving its recipient marked; a rejoin with
`resolve: rebuild` archives what only the old master has, then rebuilds it. The stop and start
commands are scripts written here: stop by pid, start with the cluster's own command line."""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ferry_control.core.db import session_scope
from ferry_control.repositories.servers import ServerRepository
from tests.conftest import LiveFactory
from tests.failure_shapes import REFUSED
from tests.helpers import finished
from tests.mariadb_cluster import MariadbCluster, cluster_module, eventually
from tests.mariadb_load import (
    MariadbLoadWriter,
    assert_nothing_acknowledged_lost,
    checksums_equal,
    register_mariadb,
    shape,
)
from tests.operations.test_operation_faults import left_running

SSHD = "/usr/sbin/sshd"
pytestmark = pytest.mark.skipif(
    not (os.path.exists(SSHD) and shutil.which("mariadb-backup") and shutil.which("mbstream")),
    reason="needs openssh-server and mariadb-backup (scripts/ensure-packages.sh)",
)


@dataclass
class Sshd:
    port: int
    private_key: str
    known_hosts: str
    root: Path


@contextmanager
def private_sshd(root: Path) -> Iterator[Sshd]:
    """A private sshd as the current user, on a free loopback port, with a generated host key and one authorised key,
    its files in `root` (made here); stopped by its pid (the `sshd` fixture's, and the rebuild benchmark's)."""
    root.mkdir()
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / name)], check=True)
    shutil.copy(root / "client_key.pub", root / "authorized_keys")
    port = cluster_module.free_ports(1)[0]
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\nPidFile {root / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n"
    )
    if os.geteuid() == 0:
        # sshd started as root wants its privilege separation directory (the package's service makes it at boot).
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    log = open(root / "sshd.log", "ab")  # noqa: SIM115 (the child keeps it)
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(root / "sshd_config")], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    try:
        host_key = (root / "host_key.pub").read_text().split()
        known_hosts = f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n"
        yield Sshd(port, (root / "client_key").read_text(), known_hosts, root)
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    with private_sshd(tmp_path / "sshd") as running:
        yield running


def server_scripts(cluster: MariadbCluster, number: int, root: Path) -> tuple[str, str, Path]:
    """The stop and start commands of server `number` (scripts in `root`) and its pid file: stop by pid (waiting
    until it is gone), start detached with the cluster's own command line."""
    server = cluster.server(number)
    pid_file = root / f"s{number}.pid"
    pid_file.write_text(f"{server.pid}\n")
    stop, start = root / f"stop-s{number}.sh", root / f"start-s{number}.sh"
    stop.write_text(
        f'#!/bin/sh\npid=$(cat {pid_file} 2>/dev/null); [ -n "$pid" ] || exit 0\n'
        'kill -TERM "$pid" 2>/dev/null || exit 0\n'
        'while [ -e "/proc/$pid" ] && [ "$(cut -d")" -f2 "/proc/$pid/stat" | cut -d" " -f2)" != Z ]; do sleep 0.05; '
        "done\n"
    )
    args = " ".join(shlex.quote(a) for a in cluster.server_args(server))
    start.write_text(f"#!/bin/sh\ncd /\nsetsid {args} </dev/null >>{root}/s{number}.out 2>&1 &\necho $! > {pid_file}\n")
    stop.chmod(0o755)
    start.chmod(0o755)
    return str(stop), str(start), pid_file


async def set_host_access(live: Any, cluster_id: int, sshd: Sshd, stop: str, start: str, **extra: Any) -> None:
    body = {"user": getpass.getuser(), "port": sshd.port, "private_key": sshd.private_key,
            "known_hosts": sshd.known_hosts, "stop_command": stop, "start_command": start, **extra}  # fmt: skip
    response = await live.client.put(
        f"/api/v1/clusters/{cluster_id}/host-access", json=body, headers=live.tokens.header("admin")
    )
    assert response.status_code == 200, response.text
    assert "PRIVATE KEY" not in response.text


def seed(cluster: MariadbCluster, rows: int = 3000) -> None:
    """A little data beyond the system tables, so the copy has something of its own."""
    cluster.sql(1, "CREATE TABLE app.seed (id INT PRIMARY KEY, pad VARCHAR(200))")
    values = ",".join(f"({i}, REPEAT('x', 200))" for i in range(rows))
    cluster.sql(1, f"INSERT INTO app.seed VALUES {values}")
    cluster.wait_converged()


def answers(cluster: MariadbCluster, number: int) -> bool:
    try:
        cluster.sql(number, "SELECT 1")
        return True
    except Exception:
        return False


def adopt(cluster: MariadbCluster, number: int, pid_file: Path) -> None:
    """The cluster's teardown stops whatever runs as server `number` now."""
    text = pid_file.read_text().strip() if pid_file.exists() else ""
    cluster.adopt(number, int(text) if text else None)


async def follow(live: Any, cluster_id: int, operation_id: int, seen: list[int]) -> dict[str, Any]:
    """Reads the operation until it ends, recording each bytes_done its progress showed while it ran."""

    async def ended() -> dict[str, Any] | None:
        response = await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")
        operation = response.json()
        progress = (operation.get("result") or {}).get("progress") or {}
        if operation["state"] == "running" and progress.get("bytes_done") is not None:
            if not seen or seen[-1] != progress["bytes_done"]:
                seen.append(progress["bytes_done"])
        return operation if operation["state"] not in ("pending", "running") else None

    return await eventually(f"rebuild operation {operation_id} to end", ended, timeout_s=120)


async def test_rebuild_under_load_replicates_from_the_right_position(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster], sshd: Sshd
) -> None:
    cluster = mariadb_factory(3)
    seed(cluster)
    stop, start, pid_file = server_scripts(cluster, 3, sshd.root)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await set_host_access(live, cluster_id, sshd, stop, start)
        writer = await MariadbLoadWriter(cluster, clients=2, domains=2, rate=200).start()
        try:
            # Its data directory is lost (what the server creates meanwhile may stay); its server still answers.
            shutil.rmtree(cluster.server(3).datadir, ignore_errors=True)
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/operations/rebuild",
                json={"registered_server_id": ids[3], "donor_registered_server_id": ids[2], "throttle_mb_s": 8},
            )
            assert response.status_code == 202, response.text
            seen: list[int] = []
            try:
                operation = await follow(live, cluster_id, response.json()["id"], seen)
            finally:
                adopt(cluster, 3, pid_file)
            assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
            assert len(set(seen)) >= 2, f"progress did not move while it ran: {seen}"
            result = operation["result"]
            assert result["donor_registered_server_id"] == ids[2]
            assert result["source_registered_server_id"] == ids[1]
            assert result["position"], result
            assert result["progress"]["bytes_done"] > 1_000_000, result["progress"]
            assert [s["name"] for s in operation["steps"]] == [
                "preflight", "pre_hooks", "mark", "quiesce", "copy", "replicate", "verify", "unmark"
            ]  # fmt: skip
            server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}")).json()
            assert server["fenced"] is False, server
        finally:
            await writer.stop()
        assert sum(writer.ledger.acked.values()) > 0
        master_port = str(cluster.server(1).port)
        assert shape(cluster)[3] == ("1", [("", master_port, "Yes", "Yes", "Slave_Pos")])
        cluster.wait_converged()
        assert_nothing_acknowledged_lost(cluster, writer)
        tables = await checksums_equal(cluster)
        assert {"app.load", "app.seed"} <= set(tables)


async def test_cancel_half_way_leaves_it_stopped_and_marked(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster], sshd: Sshd
) -> None:
    cluster = mariadb_factory(3)
    stop, start, pid_file = server_scripts(cluster, 3, sshd.root)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await set_host_access(live, cluster_id, sshd, stop, start)
        response = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/operations/rebuild",
            json={"registered_server_id": ids[3], "throttle_mb_s": 0.5},
        )
        assert response.status_code == 202, response.text
        operation_id = response.json()["id"]
        url = f"/api/v1/clusters/{cluster_id}/operations/{operation_id}"

        async def copying() -> bool:
            progress = ((await live.client.get(url)).json().get("result") or {}).get("progress") or {}
            return progress.get("phase") == "copying" and progress.get("bytes_done", 0) > 0

        try:
            await eventually("the copy to have begun (bytes_done > 0)", copying, timeout_s=60)
            viewer = await live.client.post(f"{url}/cancel", headers=live.tokens.header("viewer"))
            assert viewer.status_code == 403, viewer.text
            cancel = await live.client.post(f"{url}/cancel")
            assert cancel.status_code == 202, cancel.text
            operation = await finished(live.app, live.client, cluster_id, operation_id)
        finally:
            adopt(cluster, 3, pid_file)
        assert operation["state"] == "failed", operation
        failure = operation["result"]["failure"]
        assert failure["kind"] == "cancelled" and failure["changed"] is True and failure["left"], failure
        assert "stopped" in failure["left"][0] and "marked" in failure["left"][0]
        again = await live.client.post(f"{url}/cancel")
        assert again.status_code == 409 and again.json()["error"]["code"] == "operation_not_running", again.text
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}")).json()
        assert server["fenced"] is True and "cancelled" in server["fence_reason"], server
        assert not answers(cluster, 3), "the recipient's server answers after a cancelled rebuild"
        assert (Path(cluster.server(3).datadir) / "FERRY-REBUILD-INCOMPLETE").exists()
        audit = (await live.client.get("/api/v1/audit", headers=live.tokens.header("admin"))).json()
        assert any(a["action"] == "cancel_operation" and a["status_code"] == 202 for a in audit), audit[:3]


async def test_preflight_refusals_change_nothing(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster], sshd: Sshd
) -> None:
    cluster = mariadb_factory(3)
    stop, start, _ = server_scripts(cluster, 3, sshd.root)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        before = shape(cluster)
        base = f"/api/v1/clusters/{cluster_id}/operations/rebuild"

        async def refused(body: dict[str, Any], words: str) -> None:
            response = await live.client.post(base, json=body)
            assert response.status_code == 202, response.text
            operation = await finished(live.app, live.client, cluster_id, response.json()["id"])
            assert operation["state"] == "failed" and operation["result"]["failure"] == REFUSED, operation
            assert [s["name"] for s in operation["steps"]] == ["preflight"], operation["steps"]
            assert words in operation["error"], operation["error"]

        await refused({"registered_server_id": ids[3]}, "host access")
        await set_host_access(live, cluster_id, sshd, stop, start)
        await refused({"registered_server_id": ids[3], "donor_registered_server_id": ids[1]}, "is the master")
        await refused({"registered_server_id": ids[1]}, "is a master")
        await refused({"registered_server_id": ids[3], "resume": True}, "cannot resume an interrupted copy")
        same = await live.client.post(base, json={"registered_server_id": ids[3], "donor_registered_server_id": ids[3]})
        assert same.status_code == 422 and "itself" in same.text, same.text
        dry = await live.client.post(base, json={"registered_server_id": ids[3], "dry_run": True})
        operation = await finished(live.app, live.client, cluster_id, dry.json()["id"])
        assert operation["state"] == "succeeded", operation
        assert operation["result"]["donor_registered_server_id"] == ids[2], operation["result"]
        assert shape(cluster) == before
        assert answers(cluster, 3)
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}")).json()
        assert server["fenced"] is False


async def test_a_rebuild_left_running_by_a_dead_instance_stays_marked(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster]
) -> None:
    """The reconcile of a rebuild whose API instance died after marking its recipient: the recipient stays marked
    (its copy may be incomplete), the operation is interrupted and says so; one that died before marking changed
    nothing."""
    cluster = mariadb_factory(3)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        async with session_scope(live.app.state.sessionmaker) as session:
            row = await ServerRepository(session).get(cluster_id, ids[3])
            assert row is not None
            row.fenced, row.fence_reason = True, "rebuild: being rebuilt from s2 by operation 1"
        step = {"name": "copy", "state": "running", "started_at": "2026-11-29T04:00:00Z", "finished_at": None,
                "duration_s": None, "detail": None}  # fmt: skip
        result = {"registered_server_id": ids[3], "donor_registered_server_id": ids[2], "marked": True,
                  "progress": {"phase": "copying", "bytes_done": 1000}}  # fmt: skip
        operation_id = await left_running(live, cluster_id, "rebuild", {"registered_server_id": ids[3]}, result, [step])
        assert await live.app.state.reconciler.run_once() == [operation_id]
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        assert operation["state"] == "interrupted", operation
        failure = operation["result"]["failure"]
        assert failure["kind"] == "interrupted" and any("left marked" in w for w in failure["left"]), failure
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}")).json()
        assert server["fenced"] is True and server["fence_reason"].startswith("rebuild:"), server
        assert "interrupted" in server["fence_reason"], server

        before = shape(cluster)
        operation_id = await left_running(live, cluster_id, "rebuild", {"registered_server_id": ids[2]},
                                          {"registered_server_id": ids[2]}, [])  # fmt: skip
        assert await live.app.state.reconciler.run_once() == [operation_id]
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        assert operation["state"] == "interrupted" and operation["result"]["failure"]["changed"] is False, operation
        assert shape(cluster) == before


async def test_a_rejoin_with_transactions_only_it_has_rebuilds_it_archiving_them_first(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster], sshd: Sshd
) -> None:
    """A fenced former master with a transaction the master never had: a rejoin refuses it, listing it; with
    `resolve: rebuild` it is archived by the control plane (as SQL, exported from its binlog), then it is rebuilt
    from a donor and replicates from the master, the transaction gone, no longer fenced."""
    cluster = mariadb_factory(3)
    cluster.sql(1, "CREATE TABLE app.kv (k INT PRIMARY KEY, v INT); INSERT INTO app.kv VALUES (1, 1)")
    cluster.wait_converged()
    stop, start, pid_file = server_scripts(cluster, 3, sshd.root)
    cluster.sql(3, "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0; INSERT INTO app.kv VALUES (2, 2); "
                   "SET GLOBAL read_only = 1")  # fmt: skip
    errant = cluster.value(3, "@@gtid_binlog_pos")
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await set_host_access(live, cluster_id, sshd, stop, start)
        async with session_scope(live.app.state.sessionmaker) as session:
            row = await ServerRepository(session).get(cluster_id, ids[3])
            assert row is not None
            row.fenced, row.fence_reason = True, "replaced by a failover"
        base = f"/api/v1/clusters/{cluster_id}/operations/rejoin"
        refused = await live.client.post(base, json={"registered_server_id": ids[3]})
        operation = await finished(live.app, live.client, cluster_id, refused.json()["id"])
        assert operation["result"]["failure"] == REFUSED and operation["result"]["only_here"], operation
        response = await live.client.post(base, json={"registered_server_id": ids[3], "resolve": "rebuild"})
        assert response.status_code == 202, response.text
        try:
            operation = await follow(live, cluster_id, response.json()["id"], [])
        finally:
            adopt(cluster, 3, pid_file)
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        result = operation["result"]
        assert result["rebuild"]["donor_registered_server_id"] == ids[2] and result["rebuild"]["position"], result
        archive = await live.client.get(f"/api/v1/clusters/{cluster_id}/archives/{result['rebuild_archive_id']}")
        assert archive.status_code == 200, archive.text
        # The transaction itself, as a replayable SQL script (mariadb-binlog's), its row change written out too.
        script = archive.content.decode()
        own = next(g for g in errant.split(",") if g.split("-")[1] == str(cluster.server(3).server_id))
        assert f"GTID {own}" in script and "### INSERT INTO `app`.`kv`" in script and "###   @1=2" in script, script
        assert "###   @1=1" not in script, "nothing the master has"
        server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[3]}")).json()
        assert server["fenced"] is False, server
    assert shape(cluster)[3] == ("1", [("", str(cluster.server(1).port), "Yes", "Yes", "Slave_Pos")])
    cluster.wait_converged()
    assert cluster.sql(3, "SELECT k FROM app.kv ORDER BY k") == [["1"]]
    await checksums_equal(cluster)


async def test_the_copy_pauses_while_the_donor_trails_and_goes_on_once_it_caught_up(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster], sshd: Sshd
) -> None:
    """A donor delayed by 3 s under writes trails by more than the cluster's 1 s: the copy pauses and says why; once
    the writes stop and the donor caught up, it goes on and the rebuild completes."""
    cluster = mariadb_factory(3)
    cluster.sql(2, "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 3; START SLAVE")
    stop, start, pid_file = server_scripts(cluster, 3, sshd.root)
    async with live_app() as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        await set_host_access(live, cluster_id, sshd, stop, start, donor_lag_pause_s=1)
        writer = await MariadbLoadWriter(cluster, clients=1, domains=1, rate=50).start()
        try:

            def trailing_with_every_domain() -> bool:
                domains = {g.split("-")[0] for g in cluster.value(2, "@@gtid_current_pos").split(",") if g}
                return domains >= {"0", "1"} and int(cluster.replica_status(2)[0]["Seconds_Behind_Master"] or 0) >= 2

            await eventually(
                "the delayed donor to have every domain and trail by 2 s", trailing_with_every_domain, in_thread=True
            )
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/operations/rebuild",
                json={"registered_server_id": ids[3], "donor_registered_server_id": ids[2], "throttle_mb_s": 8},
            )
            assert response.status_code == 202, response.text
            url = f"/api/v1/clusters/{cluster_id}/operations/{response.json()['id']}"

            async def paused() -> dict[str, Any] | None:
                operation = (await live.client.get(url)).json()
                assert operation["state"] in ("pending", "running"), (operation["error"], operation["steps"])
                progress = (operation.get("result") or {}).get("progress") or {}
                return progress if progress.get("paused") else None

            progress = await eventually("the copy to pause while the donor trails", paused, timeout_s=60)
            assert "trails its source" in progress["paused_reason"] and progress["eta_s"] is None, progress
        finally:
            await writer.stop()
        try:
            operation = await follow(live, cluster_id, response.json()["id"], [])
        finally:
            adopt(cluster, 3, pid_file)
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert operation["result"]["progress"]["paused"] is False
    cluster.wait_converged()
    assert_nothing_acknowledged_lost(cluster, writer)


async def test_a_killed_master_with_writes_only_it_had_is_rebuilt_after_the_failover_and_rejoins(
    live_app: LiveFactory, mariadb_factory: Callable[..., MariadbCluster], sshd: Sshd
) -> None:
    """The day after, end to end: the master SIGKILLed under a two-domain writer with semi-sync off, holding a
    transaction in each domain its replicas never received (their IO threads stopped first); a failover; the old
    master started again is fenced (read-only). A rejoin refuses, listing what only it has in both domains; with
    `resolve: rebuild` they are archived first as SQL (each row change written out), the server is rebuilt from a
    donor and replicates from the new master, no longer fenced: nothing the writer was told had committed is lost,
    and every server's checksums are equal."""
    cluster = mariadb_factory(3)
    seed(cluster, rows=500)
    async with live_app(collector_enabled=True, poll_interval_s=0.2, poll_timeout_s=2.0) as live:
        cluster_id, ids = await register_mariadb(live.client, cluster)
        writer = await MariadbLoadWriter(cluster, clients=4, domains=2, rate=200).start()
        try:
            await eventually(
                "writes in domains 1 and 2 on the master",
                lambda: {g.split("-")[0] for g in cluster.value(1, "@@gtid_binlog_pos").split(",")} >= {"1", "2"},
                in_thread=True,
            )
            await writer.pause()
            cluster.wait_converged()
            for number in (2, 3):
                cluster.sql(number, "STOP SLAVE IO_THREAD")
            for domain in (1, 2):
                cluster.sql(1, f"SET SESSION gtid_domain_id = {domain}; "
                               f"INSERT INTO app.seed VALUES ({100000 + domain}, 'only here, {domain}')")  # fmt: skip
            cluster.kill(1)
            for number in (2, 3):
                cluster.sql(number, "START SLAVE IO_THREAD")
            failover = await live.client.post(f"/api/v1/clusters/{cluster_id}/operations/failover", json={})
            assert failover.status_code == 202, failover.text
            failed_over = await finished(live.app, live.client, cluster_id, failover.json()["id"])
            assert failed_over["state"] == "succeeded", (failed_over["error"], failed_over["steps"])
            # The old master starts writable (read_only is off in its configuration) until the control plane fences
            # it: the writer, which follows whichever server is writable, waits for that (what it wrote there would
            # be only the old master's, archived below, not acknowledged-and-kept).
            cluster.restart(1)
            await eventually(
                "the fenced old master made read-only", lambda: cluster.value(1, "@@read_only") == "1", in_thread=True
            )
            writer.resume()
            stop, start, pid_file = server_scripts(cluster, 1, sshd.root)
            await set_host_access(live, cluster_id, sshd, stop, start)
            base = f"/api/v1/clusters/{cluster_id}/operations/rejoin"
            refused = await live.client.post(base, json={"registered_server_id": ids[1]})
            listed = await finished(live.app, live.client, cluster_id, refused.json()["id"])
            assert listed["result"]["failure"] == REFUSED, listed["result"]
            assert {d["domain"] for d in listed["result"]["only_here"]} == {1, 2}, listed["result"]["only_here"]
            response = await live.client.post(base, json={"registered_server_id": ids[1], "resolve": "rebuild"})
            assert response.status_code == 202, response.text
            try:
                operation = await follow(live, cluster_id, response.json()["id"], [])
            finally:
                adopt(cluster, 1, pid_file)
            assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
            archive = await live.client.get(
                f"/api/v1/clusters/{cluster_id}/archives/{operation['result']['rebuild_archive_id']}"
            )
            assert archive.status_code == 200, archive.text
            script = archive.content.decode()
            assert "###   @2='only here, 1'" in script and "###   @2='only here, 2'" in script, script
            server = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids[1]}")).json()
            assert server["fenced"] is False, server
        finally:
            await writer.stop()
    cluster.wait_converged()
    assert cluster.sql(1, "SELECT COUNT(*) FROM app.seed WHERE id > 100000") == [["0"]], "rebuilt without them"
    assert_nothing_acknowledged_lost(cluster, writer)
    await checksums_equal(cluster)
