"""Real ferryd nodes for the backend tests: each started in a temporary directory with its admin port at its
protocol port + 100 (the layout `make up` uses, so discovery's admin_port_offset can be exercised), wired into
replication through the node admin API, and written to through the binary protocol.

The binary lookup, the protocol frames and the process mechanics (spawn, wait for the ready line, SIGTERM) come
from the ferry_engine test helper (engine/crates/ferry-py/tests/ferryd.py), loaded by path, so they are kept in one
place; this file adds what only these tests need: ports at a fixed offset, restarts on the same ports, extra flags,
replication and the admin API. The binary is $FERRYD_BIN, else engine/target/{release,debug}/ferryd.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
NODE_TOKEN = "backend-test-node-token-0123456789"
#: The admin port is the protocol port plus this.
ADMIN_PORT_OFFSET = 100
#: Bound on every wait in these helpers.
WAIT_S = 30.0
#: A protocol connection unused this long is replaced before the next transaction (ferryd's idle timeout: 300 s).
PROTOCOL_IDLE_REUSE_S = 60.0
#: One HTTP client for every node's admin API. A client per call (`httpx.get`) builds a TLS context each time, which
#: cost more CPU than the request itself in the suite's poll loops; no connection is kept alive, so a node killed and
#: restarted on its port is never answered on a connection to its former process.
ADMIN_HTTP = httpx.Client(
    headers={"Authorization": f"Bearer {NODE_TOKEN}"},
    timeout=WAIT_S,
    limits=httpx.Limits(max_keepalive_connections=0),
)


def _protocol_helper() -> ModuleType:
    path = REPO_ROOT / "engine" / "crates" / "ferry-py" / "tests" / "ferryd.py"
    spec = importlib.util.spec_from_file_location("ferry_py_test_ferryd", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


protocol = _protocol_helper()


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair(offset: int = ADMIN_PORT_OFFSET) -> tuple[int, int]:
    """A free loopback port P with P + offset free too (the node binds both right after; a clash is retried)."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port + offset > 65535:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + offset))
                except OSError:
                    continue
        return port, port + offset
    raise RuntimeError("no free port pair found")


class FerrydNode:
    """One ferryd process; `start()`, then `increment()` and the admin helpers, then `stop()`."""

    def __init__(self, root: Path, server_id: int, extra_args: tuple[str, ...] = ()):
        self.root = root
        self.server_id = server_id
        #: More ferryd flags (durability, semi-sync, …).
        self.extra_args = extra_args
        self.binary = protocol.ferryd_binary()
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.sock_used_at = 0.0
        self.request_id = 0
        self.listen = ""
        self.admin = ""
        self.protocol_port = 0
        self.admin_port = 0

    @property
    def log_path(self) -> Path:
        return self.root / "ferryd.log"

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def start(self, *, same_ports: bool = False) -> None:
        """Starts the node on fresh free ports, or (a restart) on the ports it had."""
        self.root.mkdir(parents=True, exist_ok=True)
        token_file = self.root / "admin-token"
        token_file.write_text(NODE_TOKEN)
        last_error = ""
        for _ in range(5):
            if not same_ports:
                self.protocol_port, self.admin_port = free_port_pair()
            args = [
                str(self.binary),
                "--server-id", str(self.server_id),
                "--data-dir", str(self.root / "data"),
                "--listen", f"127.0.0.1:{self.protocol_port}",
                "--admin", f"127.0.0.1:{self.admin_port}",
                "--admin-token-file", str(token_file),
                *self.extra_args,
            ]  # fmt: skip
            self.proc = protocol.spawn(args, self.log_path)
            # None: the process exited first (a port taken in between); try other ports.
            ready = protocol.read_ready(self.proc, WAIT_S, self.log_path)
            if ready is not None:
                self.listen, self.admin = ready["listen"], ready["admin"]
                host, port = self.listen.rsplit(":", 1)
                self.sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
                self.sock_used_at = time.monotonic()
                return
            last_error = self.log
        raise RuntimeError(f"ferryd {self.server_id} did not start:\n{last_error}")

    def increment(self, table: str = "t", key: str = "k", by: int = 1, *, domain: int | None = None) -> str:
        """Commits one transaction; returns its GTID."""
        return self.increment_keys(table, [key], by, domain=domain)

    def increment_keys(self, table: str, keys: list[str], by: int = 1, *, domain: int | None = None) -> str:
        """Commits one transaction incrementing every key of `keys`; returns its GTID. A connection idle for a while
        is replaced first: ferryd closes idle protocol connections (`--protocol-idle-timeout-s`), and a long test
        session can leave it unused longer."""
        assert self.sock is not None
        if time.monotonic() - self.sock_used_at > PROTOCOL_IDLE_REUSE_S:
            self.sock.close()
            host, port = self.listen.rsplit(":", 1)
            self.sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
        self.request_id += 1
        gtid = protocol.transact(self.sock, self.request_id, [(table, key, "n", by) for key in keys], domain).gtid
        self.sock_used_at = time.monotonic()
        return gtid

    # -- admin API ---------------------------------------------------------------------------------------

    def get(self, path: str) -> Any:
        response = ADMIN_HTTP.get(f"http://{self.admin}{path}")
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: Any) -> Any:
        response = ADMIN_HTTP.post(f"http://{self.admin}{path}", json=body)
        assert response.status_code == 200, f"{path}: {response.status_code} {response.text}"
        return response.json()

    def status(self) -> dict[str, Any]:
        return self.get("/v1/status")

    def replicate_from(self, master: FerrydNode, connection: str = "main") -> None:
        self.post(f"/v1/replication/{connection}/change-master", {"master": master.listen})
        self.post(f"/v1/replication/{connection}/start", {})

    def wait_for(self, position: str) -> None:
        body = self.post("/v1/wait-for-position", {"position": position, "timeout_ms": int(WAIT_S * 1000)})
        assert body["reached"], f"node {self.server_id} did not reach {position}: {body}\n{self.log}"

    def kill(self) -> None:
        """SIGKILL: the node dies at once, as in a crash."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            protocol.terminate(self.proc, WAIT_S)  # killed when SIGTERM was not enough


class FerrydCluster:
    """A master and two replicas, each replica streaming from the master over connection `main`; with
    `read_only_replicas` the replicas are made read-only, as a deployment keeps them (only the master writable).
    The nodes' server_ids are `first_server_id` and the two after it (a test of how servers are named sets them
    apart from the control plane's own ids)."""

    def __init__(
        self,
        root: Path,
        extra_args: tuple[str, ...] = (),
        master_args: tuple[str, ...] = (),
        *,
        read_only_replicas: bool = False,
        first_server_id: int = 1,
    ):
        first = first_server_id
        self.master = FerrydNode(root / "master", server_id=first, extra_args=(*extra_args, *master_args))
        self.replica1 = FerrydNode(root / "replica1", server_id=first + 1, extra_args=extra_args)
        self.replica2 = FerrydNode(root / "replica2", server_id=first + 2, extra_args=extra_args)
        self.read_only_replicas = read_only_replicas

    @property
    def nodes(self) -> list[FerrydNode]:
        return [self.master, self.replica1, self.replica2]

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        for replica in (self.replica1, self.replica2):
            replica.replicate_from(self.master)
            if self.read_only_replicas:
                replica.post("/v1/read-only", {"read_only": True})

    def write(self, count: int = 1, domains: tuple[int, ...] = (1,)) -> str:
        """Commits `count` transactions in each domain on the master; returns the master's binlog position."""
        for domain in domains:
            for i in range(count):
                self.master.increment(f"d{domain}", f"k{i % 5}", domain=domain)
        return self.master.status()["gtid_binlog_pos"]

    def converge(self) -> str:
        """Waits until both replicas have the master's position; returns it."""
        position = self.master.status()["gtid_binlog_pos"]
        self.replica1.wait_for(position)
        self.replica2.wait_for(position)
        return position

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
