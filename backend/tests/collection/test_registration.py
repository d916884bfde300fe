"""`cli register` against a real two-master MariaDB cluster (scripts/mariadb_cluster.py) and a real database: the
cluster is registered with its logins (write-only: read back as `*_set` flags only) and discovered from its multi-source
replica — both masters, found from the replica's connections, and both replicas below it, all of kind mariadb; a
collector cycle then reads each server's version; a second run replaces the logins and changes nothing else; a wrong
password fails naming the seed, and registers nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import SECRET_KEY, LiveFactory, empty_database
from tests.mariadb_cluster import MariadbCluster

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def seed000(  # type: ignore[valid-type]
    tmp_path_factory: pytest.TempPathFactory, mariadb_pristine: Path
) -> Iterator[MariadbCluster]:
    cluster = MariadbCluster(
        tmp_path_factory.mktemp("seed000"), 5, shape="seed000", die_with_parent=True, pristine=mariadb_pristine
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def register(live_database_url: str, seed000: MariadbCluster) -> Iterator[Run]:  # type: ignore[valid-type]
    """Runs `cli register` for seed000 from server 3 (the multi-source replica); the database is emptied after."""

    def run(*, password: str | None = None, cluster: str = "seed000") -> subprocess.CompletedProcess[str]:
        users = seed000.users
        env = {
            **os.environ,
            "DATABASE_URL": live_database_url,
            "FERRY_ENVIRONMENT": "development",
            "FERRY_SECRET_KEYS": SECRET_KEY,
            "FERRY_DB_PASSWORD": password or users.admin.password,
            "FERRY_REPLICATION_PASSWORD": users.replication.password,
        }
        args = [
            "register", "--cluster", cluster, "--seed", seed000.server(3).address, "--db-user", users.admin.name,
            "--replication-user", users.replication.name, "--wait-s", "3",
        ]  # fmt: skip
        return subprocess.run(
            [sys.executable, "-m", "ferry_control.cli", *args], env=env, capture_output=True, text=True, timeout=120
        )

    try:
        yield run
    finally:
        empty_database(live_database_url)


async def test_register_discovers_seed000_from_the_multi_source_replica(
    register: Run,
    live_app: LiveFactory,
    seed000: MariadbCluster,  # type: ignore[valid-type]
) -> None:
    done = register()
    assert done.returncode == 0, done.stderr
    cluster_id = int(done.stdout)
    assert "registered cluster 'seed000'" in done.stderr
    assert seed000.users.admin.password not in done.stderr + done.stdout

    async with live_app() as live:
        cluster = (await live.client.get(f"/api/v1/clusters/{cluster_id}")).json()
        assert cluster["admin_port_offset"] == 0
        for login in ("db_user", "db_password", "replication_user", "replication_password"):
            assert cluster[f"{login}_set"] is True
            assert login not in cluster
        assert cluster["tls_ca_set"] is False and cluster["plaintext_transport"] is True

        servers = (await live.client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()
        by_port = {s["protocol_port"]: s for s in servers}
        assert sorted(by_port) == sorted(s.port for s in seed000.servers)
        assert {s["kind"] for s in servers} == {"mariadb"}
        assert all(s["admin_port"] == s["protocol_port"] for s in servers)
        assert by_port[seed000.server(3).port]["origin"] == "registered"

        await live.app.state.collector.run_cycle()
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        for node in topology["nodes"]:
            assert node["kind"] == "mariadb"
            assert node["version"].startswith("10.11."), node
            # The two-master cluster runs with sync_binlog=0: each server's replicas may get ahead of its binlog.
            assert node["replicas_may_be_ahead"] is True, node
        roles = {node["protocol_port"]: node["role"] for node in topology["nodes"]}
        assert roles == {
            seed000.server(1).port: "master",
            seed000.server(2).port: "master",
            seed000.server(3).port: "intermediate",
            seed000.server(4).port: "replica",
            seed000.server(5).port: "replica",
        }
        multi = by_port[seed000.server(3).port]["id"]
        assert sorted(e["connection"] for e in topology["edges"] if e["replica_registered_server_id"] == multi) == [
            "m1",
            "m2",
        ]

        # Again (the app's database is emptied only when it stops): the logins are replaced, the cluster and its
        # servers stay as they are.
        again = register()
        assert again.returncode == 0, again.stderr
        assert int(again.stdout) == cluster_id
        assert "its logins replaced" in again.stderr and "0 known already" not in again.stderr
        assert len((await live.client.get(f"/api/v1/clusters/{cluster_id}/servers")).json()) == 5


async def test_a_wrong_password_fails_naming_the_seed_and_registers_nothing(
    register: Run,
    live_app: LiveFactory,
    seed000: MariadbCluster,  # type: ignore[valid-type]
) -> None:
    done = register(password="not-the-password", cluster="wrong")
    assert done.returncode == 1
    assert f"the seed {seed000.server(3).address} did not answer" in done.stderr
    assert "1045" in done.stderr or "denied" in done.stderr.lower()
    async with live_app() as live:
        assert (await live.client.get("/api/v1/clusters")).json() == []
