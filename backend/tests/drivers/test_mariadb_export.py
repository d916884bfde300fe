"""Exporting a MariaDB server's binlog transactions between two GTID positions as SQL (the `mariadb` driver's
`export_transactions`, mariadb-binlog reading over the replication protocol as the cluster's replication user):

- what a replica stopped behind the master lacks, in two domains, is exported from the master — exactly those
  transactions, each row change also written out as pseudo-SQL — and the script replayed on the replica gives it
  the master's rows and GTIDs;
- an export larger than its bound, a start naming a domain the end does not, a binlog file name that is a path, and a
  driver without a replication login are refused with a precise error."""

from __future__ import annotations

import subprocess

import pytest

from ferry_control.drivers.errors import DriverError, ErrorKind
from tests.mariadb_cluster import MariadbCluster, driver


def _rows(cluster: MariadbCluster, number: int) -> list[list[str]]:
    return cluster.sql(number, "SELECT id, v FROM app.t ORDER BY id")


async def test_what_a_replica_lacks_is_exported_as_sql_that_replays_it(mariadb: MariadbCluster) -> None:
    mariadb.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO app.t VALUES (1, 'kept');")
    mariadb.wait_converged()
    mariadb.sql(2, "STOP SLAVE")
    after = mariadb.value(2, "@@gtid_slave_pos") + ",7-1-0"  # domain 7: every transaction of it
    mariadb.sql(1, "INSERT INTO app.t VALUES (2, 'two'); SET SESSION gtid_domain_id = 7; "
                   "INSERT INTO app.t VALUES (3, 'three'); UPDATE app.t SET v = 'one' WHERE id = 1;")  # fmt: skip
    through = mariadb.value(1, "@@gtid_binlog_pos")
    first_file = mariadb.sql(1, "SHOW BINARY LOGS")[0][0]
    master = driver(mariadb, 1)
    try:
        script = await master.export_transactions(after, through, first_file, bytes_max=1_000_000)
    finally:
        await master.aclose()
    text = script.decode()
    assert text.count("COMMIT/*!*/;") == 3, text
    assert "###   @2='two'" in text and "###   @2='three'" in text and "###   @2='one'" in text
    assert "###   @2='kept'" in text, "the update's before image is written out too"
    assert "INSERT INTO app.t VALUES (1, 'kept')" not in text, "nothing the replica has"
    # Replayed on the replica (as root: BINLOG statements replay row events), it has the master's rows and GTIDs.
    server = mariadb.server(2)
    subprocess.run(["mariadb", "-uroot", f"--socket={server.socket}"], input=script, check=True, timeout=60)
    assert _rows(mariadb, 2) == _rows(mariadb, 1) == [["1", "one"], ["2", "two"], ["3", "three"]]
    assert mariadb.value(2, "@@gtid_binlog_pos").split(",")[-1] == through.split(",")[-1]


async def test_an_export_over_its_bound_a_path_and_a_missing_login_are_refused(mariadb: MariadbCluster) -> None:
    mariadb.sql(1, "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT); INSERT INTO app.t VALUES (1, REPEAT('x', 5000));")
    through = mariadb.value(1, "@@gtid_binlog_pos")
    first_file = mariadb.sql(1, "SHOW BINARY LOGS")[0][0]
    master = driver(mariadb, 1)
    try:
        with pytest.raises(DriverError) as large:
            await master.export_transactions("", through, first_file, bytes_max=1_000)
        assert large.value.code == "export_too_large" and "exceed 1000 bytes" in large.value.message
        with pytest.raises(DriverError) as domains:
            await master.export_transactions("5-1-0", through, first_file, bytes_max=1_000_000)
        assert domains.value.code == "bad_export_range"
        with pytest.raises(DriverError) as path:
            await master.export_transactions("", through, "../../etc/passwd", bytes_max=1_000_000)
        assert path.value.code == "bad_binlog_file"
    finally:
        await master.aclose()
    anonymous = driver(mariadb, 1, replication=None)
    try:
        with pytest.raises(DriverError) as login:
            await anonymous.export_transactions("", through, first_file, bytes_max=1_000_000)
        assert (login.value.code, login.value.kind) == ("no_replication_login", ErrorKind.not_configured)
    finally:
        await anonymous.aclose()
