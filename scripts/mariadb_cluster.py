#!/usr/bin/env python3
"""Disposable MariaDB clusters on loopback, for the backend's tests and the MariaDB demo stack (standard library only;
SQL goes through the `mariadb` command-line client over each server's unix socket, as root).

    scripts/mariadb_cluster.py start --dir D --servers N [--shape star|seed000] [--base-port P] [--durable]
                                     [--semi-sync] [--tls]
    scripts/mariadb_cluster.py stop --dir D
    scripts/mariadb_cluster.py running --dir D     exit 0 when every server of D/cluster.json runs, else 1

`start` initialises one datadir with `mariadb-install-db`, copies it for every server, starts each `mariadbd
--no-defaults` (own datadir, port, server_id, gtid_domain_id, binlog with log_slave_updates, gtid_strict_mode, ROW
format, report_host/report_port, semi-sync built in), waits until each answers `SELECT 1`, creates Ferry's users with
sql_log_bin=0 on every server (so no server starts with a GTID of its own), and wires GTID replication by shape:

- `star`: server 1 is the master, every other server replicates from it on the default connection `''`.
- `seed000` (5 servers): servers 1 and 2 are masters of domains 1 and 2; server 3 replicates from both on the named
  connections `m1` and `m2` (multi-source); servers 4 and 5 replicate from server 3.

It writes D/cluster.json (servers, pids, ports, users and their passwords; mode 0600) and prints it. `stop` reads that
file, stops every mariadbd it names by pid (SIGTERM, then SIGKILL after a bound) and removes the directories `start`
made. Importable: `MariadbCluster(root, servers=3).start()` … `.stop()`.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: Bound on waiting for one server to answer after its start, or to exit after SIGTERM.
START_WAIT_S = 60.0
STOP_WAIT_S = 30.0
#: Between two readiness probes.
PROBE_INTERVAL_S = 0.05
#: Starts of a server whose chosen port another process took first, before giving up.
PORT_ATTEMPTS = 5
#: Bound on one `mariadb` client invocation.
CLIENT_TIMEOUT_S = 60.0
#: Shapes `start` knows.
SHAPES = ("star", "seed000")
#: The schema Ferry may write canaries into, and the one the workload user owns.
FERRY_SCHEMA = "ferry"
WORKLOAD_SCHEMA = "app"
#: The least privilege Ferry's monitor/admin user needs on MariaDB 10.11: reading status, replicas, binlogs and
#: processes; read-only on and off; replication changes; KILL of other users' sessions; FLUSH; CHECKSUM TABLE;
#: BINLOG REPLAY to put a drill's canary write in each GTID domain (SET SESSION gtid_domain_id: SUPER is the only
#: other privilege that allows it).
ADMIN_GRANTS = (
    "BINLOG MONITOR, SLAVE MONITOR, REPLICATION MASTER ADMIN, PROCESS, READ_ONLY ADMIN, REPLICATION SLAVE ADMIN, "
    "BINLOG ADMIN, CONNECTION ADMIN, RELOAD, SELECT, BINLOG REPLAY"
)


@dataclass(frozen=True)
class User:
    name: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class Users:
    #: Ferry's monitor/admin user (ADMIN_GRANTS plus INSERT, CREATE on the `ferry` schema).
    admin: User
    #: Used by replicas to connect to their master: REPLICATION SLAVE only.
    replication: User
    #: A client that writes the test or demo data (all on the `app` schema; BINLOG REPLAY to pick its GTID domain).
    workload: User

    @staticmethod
    def generate() -> Users:
        return Users(
            admin=User("ferry", secrets.token_hex(12)),
            replication=User("ferry_repl", secrets.token_hex(12)),
            workload=User("app", secrets.token_hex(12)),
        )


@dataclass(frozen=True)
class Link:
    """One replication connection: `replica` (1-based) replicates from `master` on connection `name`."""

    replica: int
    master: int
    name: str = ""


@dataclass
class Server:
    """One mariadbd of the cluster (numbered from 1; server_id is the number)."""

    number: int
    server_id: int
    domain_id: int
    port: int
    datadir: str
    pid: int | None = None

    @property
    def socket(self) -> str:
        return str(Path(self.datadir) / "mariadbd.sock")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def error_log(self) -> Path:
        return Path(self.datadir) / "error.log"


def find_program(name: str) -> str:
    """`name` on PATH, else in /usr/sbin or /usr/bin (Debian puts mariadbd in /usr/sbin)."""
    found = shutil.which(name)
    if found:
        return found
    for directory in ("/usr/sbin", "/usr/bin"):
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise FileNotFoundError(f"{name} not found: run scripts/ensure-mariadb.sh (installs mariadb-server)")


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (held open together while choosing, so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def shape_links(shape: str, servers: int) -> list[Link]:
    if shape == "star":
        return [Link(replica=n, master=1) for n in range(2, servers + 1)]
    if shape == "seed000":
        if servers != 5:
            raise ValueError("the seed000 shape has 5 servers: two masters, a multi-source replica and two below it")
        return [Link(3, 1, "m1"), Link(3, 2, "m2"), Link(4, 3), Link(5, 3)]
    raise ValueError(f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")


def shape_domains(shape: str, servers: int) -> list[int]:
    """The gtid_domain_id of each server: one domain for a star (whoever is master writes it); in seed000 each master
    its own domain, the others a domain of their own that nothing writes by default."""
    if shape == "seed000":
        return [1, 2, 3, 4, 5]
    return [0] * servers


def copy_datadir(template: Path, datadir: Path) -> None:
    """A copy of a freshly installed datadir, its runs of zeros left as holes (`cp --sparse=always`): most of its
    33 MB is InnoDB's preallocated system tablespace and redo log, zeros that a byte-for-byte copy writes out and a
    test's memory-backed directory then holds per server. Sparse, the copy takes 6.5 MB and less CPU (a server's
    datadir on /dev/shm: 26–40 ms against 50–57 ms, and 4–6 ms against 11 ms to remove). The server reads holes as
    the zeros they were and fills them as it writes."""
    command = ["cp", "-a", "--sparse=always", str(template), str(datadir)]
    copied = subprocess.run(command, capture_output=True, text=True)
    if copied.returncode != 0:
        raise RuntimeError(f"copying the datadir {template} to {datadir} failed: {copied.stderr.strip()}")


def sql_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class MariadbCluster:
    """N mariadbd processes under `root` (each in root/sN); `start()` then `stop()` (idempotent)."""

    def __init__(
        self,
        root: Path,
        servers: int = 3,
        *,
        shape: str = "star",
        base_port: int | None = None,
        durable: bool = False,
        semi_sync: bool = False,
        users: Users | None = None,
        extra_args: Sequence[str] = (),
        die_with_parent: bool = False,
        tls: bool = False,
        pristine: Path | None = None,
    ):
        self.root = Path(root).resolve()
        self.shape = shape
        self.links = shape_links(shape, servers)
        #: sync_binlog=1 and innodb_flush_log_at_trx_commit=1 when True; off for speed otherwise.
        self.durable = durable
        #: Semi-sync on every master and replica (it is built in and can be turned on later otherwise).
        self.semi_sync = semi_sync
        self.users = users or Users.generate()
        #: More mariadbd options for every server.
        self.extra_args = tuple(extra_args)
        #: Servers get SIGKILL when this process dies (Linux): a test run that is killed leaves no mariadbd behind.
        self.die_with_parent = die_with_parent
        #: A CA made for the cluster (root/tls/ca.pem, with the openssl command) signs each server's certificate
        #: for 127.0.0.1; clients may then verify the servers against root/tls/ca.pem.
        self.tls = tls
        #: A directory for a pristine `mariadb-install-db` datadir, made there by the first cluster that needs it and
        #: copied by every later one (the install is most of a cluster's start: its bootstrap fsyncs every system
        #: table). None: each cluster installs its own. Not shared between processes: one directory per process.
        self.pristine = Path(pristine).resolve() if pristine is not None else None
        #: Ports chosen here (no base_port): one another process took meanwhile is chosen again (`start`).
        self._chosen_ports = not base_port
        ports = [base_port + i for i in range(servers)] if base_port else free_ports(servers)
        domains = shape_domains(shape, servers)
        self.servers = [
            Server(number=n, server_id=n, domain_id=domains[n - 1], port=ports[n - 1], datadir=str(self.root / f"s{n}"))
            for n in range(1, servers + 1)
        ]
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._made_root = False

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Starts every server, creates the users and wires replication; on any failure stops what it started."""
        try:
            self._made_root = not self.root.exists()
            self.root.mkdir(parents=True, exist_ok=True)
            if self.pristine is not None:
                template = self._pristine_install(self.pristine)
            else:
                template = self.root / "template"
                self._install(template)
            if self.tls:
                self._make_certificates()
            for server in self.servers:
                copy_datadir(template, Path(server.datadir))
            if self.pristine is None:
                shutil.rmtree(template)
                shutil.rmtree(self.root / "template.tmp", ignore_errors=True)
            for server in self.servers:
                self._spawn(server)
            for server in self.servers:
                self._wait_ready_rebinding(server)
                self.sql(server.number, self._users_sql())
            self._wire()
            self.write_state()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stops every server this object started (by pid; all asked at once, then each awaited) and removes their
        directories."""
        stop_pids([(server.pid, server.datadir, self._procs.pop(server.number, None)) for server in self.servers])
        for server in self.servers:
            server.pid = None
            shutil.rmtree(server.datadir, ignore_errors=True)
            shutil.rmtree(f"{server.datadir}.tmp", ignore_errors=True)
        shutil.rmtree(self.root / "template", ignore_errors=True)
        shutil.rmtree(self.root / "template.tmp", ignore_errors=True)
        shutil.rmtree(self.tls_dir, ignore_errors=True)
        (self.root / "cluster.json").unlink(missing_ok=True)
        if self._made_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def kill(self, number: int) -> None:
        """SIGKILL one server (its datadir stays, `restart` brings it back)."""
        server = self.server(number)
        proc = self._procs.pop(number, None)
        if server.pid is not None:
            os.kill(server.pid, signal.SIGKILL)
            if proc is not None:
                proc.wait(STOP_WAIT_S)
            server.pid = None

    def restart(self, number: int) -> None:
        """Starts a stopped or killed server again on its datadir and port (its replication settings persist)."""
        server = self.server(number)
        stop_pid(server.pid, server.datadir, self._procs.pop(number, None))
        self._spawn(server)
        self._wait_ready(server)
        self.write_state()

    def adopt(self, number: int, pid: int | None) -> None:
        """Server `number` now runs as `pid` (started by something else — a rebuild's start command; None: not
        running): the process this object started is reaped, and `stop` stops `pid` instead."""
        proc = self._procs.pop(number, None)
        if proc is not None:
            stop_pid(proc.pid, self.server(number).datadir, proc)
        self.server(number).pid = pid

    # -- servers -------------------------------------------------------------------------------------------

    def server(self, number: int) -> Server:
        return self.servers[number - 1]

    def server_args(self, server: Server) -> list[str]:
        d = server.datadir
        args = [
            find_program("mariadbd"), "--no-defaults", f"--datadir={d}", f"--socket={server.socket}",
            f"--port={server.port}", "--bind-address=127.0.0.1", f"--pid-file={d}/mariadbd.pid",
            f"--log-error={server.error_log}", f"--server-id={server.server_id}", f"--tmpdir={self._tmpdir(Path(d))}",
            f"--gtid-domain-id={server.domain_id}", f"--log-bin={d}/binlog",
            "--log-slave-updates", "--gtid-strict-mode=1", "--binlog-format=ROW", "--report-host=127.0.0.1",
            f"--report-port={server.port}", "--skip-name-resolve", "--innodb-buffer-pool-size=64M",
            "--innodb-log-file-size=16M", "--max-connections=200", "--skip-slave-start",
            f"--sync-binlog={1 if self.durable else 0}",
            f"--innodb-flush-log-at-trx-commit={1 if self.durable else 2}",
        ]  # fmt: skip
        if not self.durable:
            args += ["--innodb-doublewrite=0"]
        if self.semi_sync:
            # Both roles on every server, so whichever is promoted keeps the guarantee. wait_no_slave=OFF: a server
            # with no semi-sync replica connected does not wait — else every replica's SQL thread (its applied
            # transactions are binlogged, log_slave_updates) waited the whole timeout for an acknowledgement from
            # replicas it does not have ("Waiting for semi-sync ACK from slave"), and fell far behind.
            args += [
                "--rpl-semi-sync-master-enabled=1", "--rpl-semi-sync-slave-enabled=1",
                "--rpl-semi-sync-master-timeout=10000", "--rpl-semi-sync-master-wait-point=AFTER_SYNC",
                "--rpl-semi-sync-master-wait-no-slave=OFF",
            ]  # fmt: skip
        if self.tls:
            tls = self.tls_dir
            args += [
                f"--ssl-ca={tls / 'ca.pem'}",
                f"--ssl-cert={tls / 'server.pem'}",
                f"--ssl-key={tls / 'server-key.pem'}",
            ]
        if os.geteuid() == 0:
            args.append("--user=root")
        return args + list(self.extra_args)

    @staticmethod
    def _tmpdir(datadir: Path) -> Path:
        """A temporary directory of the server's own, beside its datadir (the shared /tmp made concurrent
        installs trip over each other's temporary tables)."""
        tmp = datadir.parent / f"{datadir.name}.tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        return tmp

    @property
    def tls_dir(self) -> Path:
        return self.root / "tls"

    def _make_certificates(self) -> None:
        """A CA and one server certificate for 127.0.0.1 that every server of the cluster presents."""
        d = self.tls_dir
        d.mkdir(exist_ok=True)
        (d / "san.cnf").write_text("subjectAltName = IP:127.0.0.1, DNS:localhost\n")
        openssl = find_program("openssl")
        for args in (
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=ferry-test-ca",
             "-keyout", "ca-key.pem", "-out", "ca.pem"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server-key.pem",
             "-out", "server.csr"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
             "-days", "2", "-extfile", "san.cnf", "-out", "server.pem"],
        ):  # fmt: skip
            result = subprocess.run([openssl, *args], cwd=d, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
            if result.returncode != 0:
                raise RuntimeError(f"openssl {args[0]} failed: {result.stderr}")

    def _pristine_install(self, directory: Path) -> Path:
        """The datadir `mariadb-install-db` made in `directory`, made now when it is not there yet (installed beside
        and renamed into place once complete, so a failed install is never copied)."""
        datadir = directory / "datadir"
        if not datadir.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            partial = directory / "installing"
            shutil.rmtree(partial, ignore_errors=True)
            self._install(partial)
            shutil.rmtree(directory / "installing.tmp", ignore_errors=True)
            partial.rename(datadir)
        return datadir

    def _install(self, datadir: Path) -> None:
        args = [
            find_program("mariadb-install-db"), "--no-defaults", f"--datadir={datadir}",
            "--auth-root-authentication-method=normal", "--skip-test-db", "--innodb-log-file-size=16M",
            f"--tmpdir={self._tmpdir(datadir)}",
            f"--user={'root' if os.geteuid() == 0 else _user_name()}",
        ]  # fmt: skip
        result = subprocess.run(args, capture_output=True, text=True, timeout=START_WAIT_S)
        if result.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")

    def _spawn(self, server: Server) -> None:
        log = open(Path(server.datadir) / "mariadbd.out", "ab")  # noqa: SIM115 (the child keeps it)
        proc = subprocess.Popen(
            self.server_args(server), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent if self.die_with_parent else None,
        )  # fmt: skip
        log.close()
        self._procs[server.number] = proc
        server.pid = proc.pid

    def _wait_ready_rebinding(self, server: Server) -> None:
        """`_wait_ready`; where its port was chosen here and another process bound it between the choice and the
        server's start (free_ports holds nothing open), the server starts again on another free port, a few times."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                self._wait_ready(server)
                return
            except RuntimeError:
                taken = "Address already in use" in _tail(server.error_log)
                if not (self._chosen_ports and taken) or attempt == PORT_ATTEMPTS:
                    raise
            used = {s.port for s in self.servers}
            server.port = next(p for p in free_ports(len(used) + 1) if p not in used)
            self._spawn(server)

    def _wait_ready(self, server: Server) -> None:
        """Until `SELECT 1` answers over the socket; fails early when the process exited."""
        deadline = time.monotonic() + START_WAIT_S
        proc = self._procs.get(server.number)
        while True:
            probe = subprocess.run(
                self._client_args(server) + ["-e", "SELECT 1"], capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S
            )
            if probe.returncode == 0:
                return
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"mariadbd s{server.number} exited ({proc.returncode}):\n{_tail(server.error_log)}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"mariadbd s{server.number} did not answer SELECT 1 within {START_WAIT_S}s: {probe.stderr.strip()}"
                    f"\n{_tail(server.error_log)}"
                )
            time.sleep(PROBE_INTERVAL_S)

    # -- SQL -----------------------------------------------------------------------------------------------

    def _client_args(self, server: Server) -> list[str]:
        return [find_program("mariadb"), "--no-defaults", f"--socket={server.socket}", "--user=root", "--batch",
                "--skip-column-names"]  # fmt: skip

    def sql(self, number: int, statements: str, *, names: bool = False) -> list[list[str]]:
        """Runs `statements` as root on server `number`; returns the rows of the results (tab-separated cells,
        NULL as the text "NULL"; with `names`, each result's column names come first)."""
        server = self.server(number)
        args = self._client_args(server)
        if names:
            args.remove("--skip-column-names")
        result = subprocess.run(args, input=statements, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
        if result.returncode != 0:
            raise RuntimeError(f"SQL on s{number} failed: {result.stderr.strip()}\n-- statements:\n{statements}")
        return [line.split("\t") for line in result.stdout.splitlines()]

    def replica_status(self, number: int) -> list[dict[str, str]]:
        """SHOW ALL SLAVES STATUS of server `number`, one dict per connection."""
        rows = self.sql(number, "SHOW ALL SLAVES STATUS", names=True)
        return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]] if rows else []

    def value(self, number: int, expression: str) -> str:
        rows = self.sql(number, f"SELECT {expression}")
        return rows[0][0]

    def _users_sql(self) -> str:
        u = self.users
        # Local to each server: none of this reaches a binlog, so every server starts without GTIDs.
        return f"""
SET SESSION sql_log_bin = 0;
CREATE USER {sql_quote(u.admin.name)}@'%' IDENTIFIED BY {sql_quote(u.admin.password)};
GRANT {ADMIN_GRANTS} ON *.* TO {sql_quote(u.admin.name)}@'%';
CREATE DATABASE {FERRY_SCHEMA};
GRANT INSERT, CREATE ON {FERRY_SCHEMA}.* TO {sql_quote(u.admin.name)}@'%';
CREATE USER {sql_quote(u.replication.name)}@'%' IDENTIFIED BY {sql_quote(u.replication.password)};
GRANT REPLICATION SLAVE ON *.* TO {sql_quote(u.replication.name)}@'%';
CREATE DATABASE {WORKLOAD_SCHEMA};
CREATE USER {sql_quote(u.workload.name)}@'%' IDENTIFIED BY {sql_quote(u.workload.password)};
GRANT ALL ON {WORKLOAD_SCHEMA}.* TO {sql_quote(u.workload.name)}@'%';
GRANT BINLOG REPLAY ON *.* TO {sql_quote(u.workload.name)}@'%';
GRANT SLAVE MONITOR ON *.* TO {sql_quote(u.workload.name)}@'%';
SET SESSION sql_log_bin = 1;
"""

    def change_master_sql(self, link: Link) -> str:
        master = self.server(link.master)
        r = self.users.replication
        return (
            f"CHANGE MASTER {sql_quote(link.name)} TO MASTER_HOST='127.0.0.1', MASTER_PORT={master.port}, "
            f"MASTER_USER={sql_quote(r.name)}, MASTER_PASSWORD={sql_quote(r.password)}, "
            "MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;"
        )

    def _wire(self) -> None:
        replicas = sorted({link.replica for link in self.links})
        for number in replicas:
            links = [link for link in self.links if link.replica == number]
            statements = "SET GLOBAL read_only = 1;\n" + "\n".join(
                self.change_master_sql(link) + f"\nSTART SLAVE {sql_quote(link.name)};" for link in links
            )
            self.sql(number, statements)
        for number in replicas:
            self.wait_replicating(number)

    def wait_replicating(self, number: int) -> None:
        """Until every connection of server `number` has both threads running (IO connected)."""
        deadline = time.monotonic() + START_WAIT_S
        while True:
            status = self.replica_status(number)
            if status and all(c["Slave_IO_Running"] == "Yes" and c["Slave_SQL_Running"] == "Yes" for c in status):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"s{number}: replication not running within {START_WAIT_S}s: {status}")
            time.sleep(PROBE_INTERVAL_S)

    def upstream(self, number: int, links: Sequence[tuple[int, int]] | None = None) -> set[int]:
        """Server `number` and every server it replicates from, directly or through others: by `links` ((replica,
        master) numbers) when given, else by the shape the cluster was started with."""
        pairs = [(link.replica, link.master) for link in self.links] if links is None else list(links)
        found = {number}
        todo = [number]
        while todo:
            replica = todo.pop()
            for link_replica, master in pairs:
                if link_replica == replica and master not in found:
                    found.add(master)
                    todo.append(master)
        return found

    def live_links(self) -> list[tuple[int, int]]:
        """(replica, master) numbers as the servers replicate now (a switchover may have changed the shape)."""
        by_port = {str(s.port): s.number for s in self.servers}
        return [
            (s.number, by_port[status["Master_Port"]])
            for s in self.servers
            for status in self.replica_status(s.number)
            if status.get("Master_Port") in by_port
        ]

    def wait_converged(self, timeout_s: float = START_WAIT_S) -> str:
        """Until every server's @@gtid_current_pos has what its upstream servers have binlogged (the newest GTID of
        each domain among them), upstream as the servers replicate now; returns the position of the most complete
        server (all domains)."""
        deadline = time.monotonic() + timeout_s
        while True:
            links = self.live_links()
            binlog = {s.number: _position(self.value(s.number, "@@gtid_binlog_pos")) for s in self.servers}
            have = {s.number: _position(self.value(s.number, "@@gtid_current_pos")) for s in self.servers}
            want = {n: _join(binlog[m] for m in self.upstream(n, links)) for n in have}
            if all(have[n] == want[n] for n in have):
                return _format(_join(have.values()))
            if time.monotonic() > deadline:
                raise TimeoutError(f"servers did not converge within {timeout_s}s: have {have}, want {want}")
            time.sleep(PROBE_INTERVAL_S)

    # -- state file ----------------------------------------------------------------------------------------

    def state(self) -> dict[str, object]:
        return {
            "shape": self.shape,
            "durable": self.durable,
            "semi_sync": self.semi_sync,
            "made_root": self._made_root,
            "servers": [{**asdict(s), "socket": s.socket, "address": s.address} for s in self.servers],
            "links": [asdict(link) for link in self.links],
            "users": {role: {"user": u.name, "password": u.password} for role, u in _users_by_role(self.users)},
            "tls_ca_file": str(self.tls_dir / "ca.pem") if self.tls else None,
        }

    def write_state(self) -> None:
        path = self.root / "cluster.json"
        path.touch(mode=0o600, exist_ok=True)
        path.write_text(json.dumps(self.state(), indent=2) + "\n")


def _position(text: str) -> dict[int, tuple[int, int]]:
    """GTID position text → {domain: (seq_no, server_id)}."""
    result = {}
    for part in text.replace("\n", ",").split(","):
        if part.strip():
            domain, server_id, seq_no = (int(x) for x in part.strip().split("-"))
            result[domain] = (seq_no, server_id)
    return result


def _join(positions: Iterable[dict[int, tuple[int, int]]]) -> dict[int, tuple[int, int]]:
    joined: dict[int, tuple[int, int]] = {}
    for position in positions:
        for domain, gtid in position.items():
            joined[domain] = max(joined.get(domain, gtid), gtid)
    return joined


def _format(position: dict[int, tuple[int, int]]) -> str:
    return ",".join(f"{d}-{position[d][1]}-{position[d][0]}" for d in sorted(position))


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG; Linux only)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _users_by_role(users: Users) -> list[tuple[str, User]]:
    return [("admin", users.admin), ("replication", users.replication), ("workload", users.workload)]


def _user_name() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} unreadable)"


def _is_ours(pid: int, datadir: str) -> bool:
    """Whether `pid` is still the mariadbd serving `datadir` (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"--datadir={datadir}".encode() in cmdline


def stop_pid(pid: int | None, datadir: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the mariadbd `pid` (only if it still serves `datadir`), wait for it, SIGKILL after STOP_WAIT_S."""
    stop_pids([(pid, datadir, proc)])


def stop_pids(servers: list[tuple[int | None, str, subprocess.Popen[bytes] | None]]) -> None:
    """`stop_pid` for several servers: every one SIGTERMed first, then each awaited (their shutdowns overlap)."""
    asked = []
    for pid, datadir, proc in servers:
        if pid is None:
            continue
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                asked.append((pid, datadir, proc))
        elif _is_ours(pid, datadir):
            os.kill(pid, signal.SIGTERM)
            asked.append((pid, datadir, None))
    for pid, datadir, proc in asked:
        if proc is not None:
            try:
                proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_WAIT_S)
            continue
        deadline = time.monotonic() + STOP_WAIT_S
        while _is_ours(pid, datadir) and not _zombie(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + STOP_WAIT_S
            time.sleep(PROBE_INTERVAL_S)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def stop_dir(root: Path) -> None:
    """Stops the cluster described by root/cluster.json and removes what `start` made."""
    root = Path(root).resolve()
    path = root / "cluster.json"
    if not path.exists():
        return
    state = json.loads(path.read_text())
    for server in state["servers"]:
        stop_pid(server.get("pid"), server["datadir"])
        shutil.rmtree(server["datadir"], ignore_errors=True)
        shutil.rmtree(f"{server['datadir']}.tmp", ignore_errors=True)
    shutil.rmtree(root / "tls", ignore_errors=True)
    path.unlink(missing_ok=True)
    if state.get("made_root"):
        shutil.rmtree(root, ignore_errors=True)


def running_dir(root: Path) -> bool:
    """Whether root/cluster.json describes a cluster whose every mariadbd still runs (by pid and datadir)."""
    path = Path(root).resolve() / "cluster.json"
    if not path.exists():
        return False
    servers = json.loads(path.read_text())["servers"]
    return all(s.get("pid") and _is_ours(s["pid"], s["datadir"]) and not _zombie(s["pid"]) for s in servers)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="start a cluster in DIR and print its description (JSON)")
    start.add_argument("--dir", required=True, type=Path)
    start.add_argument("--servers", type=int, default=3)
    start.add_argument("--shape", choices=SHAPES, default="star")
    start.add_argument("--base-port", type=int, default=None, help="server N listens on P+N-1 (default: free ports)")
    start.add_argument("--durable", action="store_true", help="sync_binlog=1, innodb_flush_log_at_trx_commit=1")
    start.add_argument("--semi-sync", action="store_true", help="semi-sync on for every master and replica")
    start.add_argument("--tls", action="store_true", help="TLS with a CA made for the cluster (DIR/tls/ca.pem)")
    stop = commands.add_parser("stop", help="stop the cluster in DIR and remove its directories")
    stop.add_argument("--dir", required=True, type=Path)
    running = commands.add_parser("running", help="exit 0 when every server of the cluster in DIR runs, else 1")
    running.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args(argv)
    if args.command == "running":
        return 0 if running_dir(args.dir) else 1
    if args.command == "start":
        if (args.dir / "cluster.json").exists():
            parser.error(f"{args.dir} already holds a cluster (stop it first)")
        cluster = MariadbCluster(
            args.dir, args.servers, shape=args.shape, base_port=args.base_port, durable=args.durable,
            semi_sync=args.semi_sync, tls=args.tls,
        )  # fmt: skip
        cluster.start()
        print(json.dumps(cluster.state(), indent=2))
    else:
        stop_dir(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
