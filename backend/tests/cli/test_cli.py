"""`cli bootstrap` against real ferryd nodes and a real database: fresh nodes become node 1 → nodes 2 and 3 (read-only),
registered as a cluster; a second run changes nothing; a wired topology is kept (its writable replicas made
read-only); every node stopped and started again (`make down && make up`) comes back with its replicas read-only; a
silent node fails it by name."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import text
from sqlalchemy.pool import NullPool

from tests.conftest import empty_database
from tests.ferryd_cluster import NODE_TOKEN, FerrydCluster, FerrydNode, free_port_pair

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli(live_database_url: str) -> Iterator[Run]:
    """Runs `python -m ferry_control.cli ARGS` on the live database (emptied afterwards) with the nodes' token."""
    env = {
        **os.environ,
        "DATABASE_URL": live_database_url,
        "FERRY_NODE_TOKEN": NODE_TOKEN,
        "FERRY_ENVIRONMENT": "development",
    }
    env.pop("FERRY_NODE_TOKEN_FILE", None)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ferry_control.cli", *args], env=env, capture_output=True, text=True, timeout=120
        )

    try:
        yield run
    finally:
        empty_database(live_database_url)


@pytest.fixture
def fresh_nodes(tmp_path: Path) -> Iterator[list[FerrydNode]]:
    """Three started ferryd nodes with no replication between them."""
    nodes = [FerrydNode(tmp_path / f"node{i}", server_id=i) for i in (1, 2, 3)]
    try:
        for node in nodes:
            node.start()
        yield nodes
    finally:
        for node in nodes:
            node.stop()


def node_args(nodes: list[FerrydNode]) -> list[str]:
    args = []
    for i, node in enumerate(nodes, start=1):
        args += ["--node", f"node{i}={node.listen},http://{node.admin}"]
    return args


def registered(database_url: str) -> list[tuple[str, int, str, str, int, int]]:
    """(cluster, admin_port_offset, server, host, protocol port, admin port) of every registered server."""
    engine = create_sync_engine(database_url, poolclass=NullPool)
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT c.name, c.admin_port_offset, s.name, s.host, s.protocol_port, s.admin_port "
                "FROM clusters c JOIN servers s ON s.cluster_id = c.id ORDER BY s.name"
            )
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def test_bootstrap_wires_fresh_nodes_registers_them_and_changes_nothing_the_second_time(
    cli: Run, fresh_nodes: list[FerrydNode], live_database_url: str
) -> None:
    master, replica1, replica2 = fresh_nodes
    first = cli("bootstrap", "--cluster", "local", "--description", "test", *node_args(fresh_nodes), "--wait-s", "30")
    assert first.returncode == 0, first.stderr
    cluster_id = int(first.stdout.strip())
    assert "node2, node3 read-only, replicating from node1" in first.stderr
    assert f"registered cluster 'local' (id {cluster_id})" in first.stderr

    assert master.status()["read_only"] is False and master.get("/v1/replication")["connections"] == []
    for replica in (replica1, replica2):
        assert replica.status()["read_only"] is True
        (connection,) = replica.get("/v1/replication")["connections"]
        assert connection["name"] == "main" and connection["master"] == master.listen and connection["running"]
    gtid = master.increment()
    for replica in (replica1, replica2):
        replica.wait_for(gtid)
    assert registered(live_database_url) == [
        ("local", 100, f"node{i}", "127.0.0.1", node.protocol_port, node.admin_port)
        for i, node in enumerate(fresh_nodes, start=1)
    ]

    second = cli("bootstrap", "--cluster", "local", *node_args(fresh_nodes), "--wait-s", "30")
    assert second.returncode == 0, second.stderr
    assert int(second.stdout.strip()) == cluster_id
    assert "replication kept as it is: nodes with connections already: node2 (1), node3 (1)" in second.stderr
    assert f"cluster 'local' is registered already (id {cluster_id}): left as it is" in second.stderr
    assert len(registered(live_database_url)) == 3
    for replica in (replica1, replica2):
        (connection,) = replica.get("/v1/replication")["connections"]
        assert connection["master"] == master.listen and replica.status()["read_only"] is True


def test_a_stop_and_start_of_every_node_brings_the_replicas_back_read_only(
    cli: Run, fresh_nodes: list[FerrydNode]
) -> None:
    """What `make down && make up` does to the nodes: all stopped, all started again with the same command line
    (no --read-only). The replicas are read-only before bootstrap runs again (the nodes' recorded flag), the master
    stays writable, and a client's write to a replica is refused."""
    master, replica1, replica2 = fresh_nodes
    first = cli("bootstrap", "--cluster", "local", *node_args(fresh_nodes), "--wait-s", "30")
    assert first.returncode == 0, first.stderr
    for node in fresh_nodes:
        node.stop()
    for node in fresh_nodes:
        node.start(same_ports=True)
    assert [n.status()["read_only"] for n in fresh_nodes] == [False, True, True]
    with pytest.raises(Exception, match="(?i)read.only"):
        replica1.increment()
    again = cli("bootstrap", "--cluster", "local", *node_args(fresh_nodes), "--wait-s", "30")
    assert again.returncode == 0, again.stderr
    assert "made read-only again" not in again.stderr
    gtid = master.increment()
    for replica in (replica1, replica2):
        replica.wait_for(gtid)
        assert replica.status()["read_only"] is True


def test_bootstrap_keeps_a_topology_that_is_wired_already(
    cli: Run, ferryd_factory: Callable[..., FerrydCluster], live_database_url: str
) -> None:
    cluster = ferryd_factory()  # wired already (as after a switchover), the replicas left writable
    before = [n.get("/v1/replication")["connections"] for n in cluster.nodes]
    result = cli("bootstrap", "--cluster", "wired", *node_args(cluster.nodes))
    assert result.returncode == 0, result.stderr
    assert (
        "replication kept as it is: nodes with connections already: node2 (1), node3 (1); "
        "made read-only again (writable while replicating): node2, node3" in result.stderr
    )
    # The topology is kept, but a node that replicates never stays writable.
    assert [n.status()["read_only"] for n in cluster.nodes] == [False, True, True]
    after = [n.get("/v1/replication")["connections"] for n in cluster.nodes]
    assert [[(c["name"], c["master"]) for c in node] for node in after] == [
        [(c["name"], c["master"]) for c in node] for node in before
    ]
    assert [r[2] for r in registered(live_database_url)] == ["node1", "node2", "node3"]


def test_bootstrap_fails_naming_the_node_that_never_answers(
    cli: Run, fresh_nodes: list[FerrydNode], live_database_url: str
) -> None:
    silent_port, silent_admin_port = free_port_pair()
    args = node_args(fresh_nodes[:2]) + [
        "--node",
        f"node3=127.0.0.1:{silent_port},http://127.0.0.1:{silent_admin_port}",
    ]
    result = cli("bootstrap", "--cluster", "local", *args, "--wait-s", "1")
    assert result.returncode == 1 and result.stdout == ""
    assert (
        f"error: node3 (http://127.0.0.1:{silent_admin_port}) did not answer GET /v1/status within 1 s" in result.stderr
    )
    assert "node1" not in result.stderr.split("error:", 1)[1] and "Traceback" not in result.stderr
    # Nothing changed: no node wired, nothing registered.
    assert all(n.get("/v1/replication")["connections"] == [] for n in fresh_nodes[:2])
    assert registered(live_database_url) == []
