"""Real ferryd nodes for the backend tests: each started in a temporary directory with its admin port at its
protocol port + 100 (the layout `make up` uses, so discovery's admin_port_offset can be exercised), wired into
replication through the node admin API, and written to through the binary protocol.

The protocol frames come from the ferry_engine test helper (engine/crates/ferry-py/tests/ferryd.py), so the
encoding is kept in one place; the binary is $FERRYD_BIN, else engine/target/{release,debug}/ferryd.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import socket
import struct
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


def _protocol_helper() -> ModuleType:
    path = REPO_ROOT / "engine" / "crates" / "ferry-py" / "tests" / "ferryd.py"
    spec = importlib.util.spec_from_file_location("ferry_py_test_ferryd", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


protocol = _protocol_helper()


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
        self.request_id = 0
        self.listen = ""
        self.admin = ""
        self.protocol_port = 0
        self.admin_port = 0

    @property
    def log(self) -> str:
        return (self.root / "ferryd.log").read_text(errors="replace")

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
            with open(self.root / "ferryd.log", "ab") as log:
                self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log)
            ready = self._read_ready()
            if ready is not None:
                self.listen, self.admin = ready["listen"], ready["admin"]
                host, port = self.listen.rsplit(":", 1)
                self.sock = socket.create_connection((host, int(port)), timeout=WAIT_S)
                return
            last_error = self.log
        raise RuntimeError(f"ferryd {self.server_id} did not start:\n{last_error}")

    def _read_ready(self) -> dict[str, Any] | None:
        """The ready line, or None when the process exited first (a port taken in between)."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + WAIT_S
        line = b""
        while not line.endswith(b"\n"):
            readable, _, _ = select.select([self.proc.stdout], [], [], max(deadline - time.monotonic(), 0))
            if not readable:
                self.proc.kill()
                raise TimeoutError(f"ferryd printed no ready line within {WAIT_S}s:\n{self.log}")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                self.proc.wait()
                return None
            line += chunk
        ready = json.loads(line.decode().splitlines()[0])
        assert ready["event"] == "ready", ready
        return ready

    def _recv_exact(self, n: int) -> bytes:
        assert self.sock is not None
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("ferryd closed the connection")
            data += chunk
        return data

    def increment(self, table: str = "t", key: str = "k", by: int = 1, *, domain: int | None = None) -> str:
        """Commits one transaction; returns its GTID."""
        assert self.sock is not None
        self.request_id += 1
        self.sock.sendall(protocol.encode_increments(self.request_id, [(table, key, "n", by)], domain))
        (length,) = struct.unpack("<I", self._recv_exact(4))
        return protocol.decode_response(self._recv_exact(length), self.request_id).gtid

    # -- admin API ---------------------------------------------------------------------------------------

    def get(self, path: str) -> Any:
        response = httpx.get(f"http://{self.admin}{path}", timeout=WAIT_S)
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: Any) -> Any:
        response = httpx.post(
            f"http://{self.admin}{path}", json=body, headers={"Authorization": f"Bearer {NODE_TOKEN}"}, timeout=WAIT_S
        )
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
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()


class FerrydCluster:
    """A master and two replicas, each replica streaming from the master over connection `main`."""

    def __init__(self, root: Path, extra_args: tuple[str, ...] = (), master_args: tuple[str, ...] = ()):
        self.master = FerrydNode(root / "master", server_id=1, extra_args=(*extra_args, *master_args))
        self.replica1 = FerrydNode(root / "replica1", server_id=2, extra_args=extra_args)
        self.replica2 = FerrydNode(root / "replica2", server_id=3, extra_args=extra_args)

    @property
    def nodes(self) -> list[FerrydNode]:
        return [self.master, self.replica1, self.replica2]

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        self.replica1.replicate_from(self.master)
        self.replica2.replicate_from(self.master)

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
