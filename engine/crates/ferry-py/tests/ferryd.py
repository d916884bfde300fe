"""A real ferryd node for tests: started on a temporary data directory, written to through its binary
protocol (the frames of ferry-core's protocol.rs), flushed through its admin HTTP API, stopped with SIGTERM.

Only the increment operation is encoded: it is enough to produce transactions with before and after images.

The backend's tests (backend/tests/ferryd_cluster.py) load this file too: the binary lookup, the frames and the
process helpers (`spawn`, `read_ready`, `transact`, `terminate`) live here once; `Node` is this suite's own node.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parents[3]

PROTOCOL_VERSION = 1
OP_TRANSACT = 0x10
OP_INCREMENT = 3
R_COMMITTED = 0x90
R_ERROR = 0xFF


def ferryd_binary() -> Path:
    """$FERRYD_BIN when set, else engine/target/release/ferryd, else engine/target/debug/ferryd."""
    if env := os.environ.get("FERRYD_BIN"):
        path = Path(env)
        if not path.is_file():
            raise FileNotFoundError(f"FERRYD_BIN={env} is not a file")
        return path
    for profile in ("release", "debug"):
        path = ENGINE_DIR / "target" / profile / "ferryd"
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"no ferryd binary: set FERRYD_BIN or build it (cd {ENGINE_DIR} && cargo build --release -p ferryd)"
    )


def _str(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<I", len(data)) + data


def _opt(fmt: str, value: int | None) -> bytes:
    return b"\x00" if value is None else b"\x01" + struct.pack(fmt, value)


def encode_increments(request_id: int, increments: list[tuple[str, str, str, int]], domain: int | None) -> bytes:
    """A whole Transact frame (length prefix included) of `(table, key, field, by)` increments."""
    body = _opt("<I", domain) + _opt("<I", None) + _opt("<Q", None) + struct.pack("<I", len(increments))
    for table, key, field, by in increments:
        body += bytes([OP_INCREMENT]) + _str(table) + _str(key) + _str(field) + struct.pack("<q", by)
    frame = struct.pack("<BBI", PROTOCOL_VERSION, OP_TRANSACT, request_id) + body
    return struct.pack("<I", len(frame)) + frame


@dataclass(frozen=True)
class Committed:
    """The node's acknowledgement of a transaction."""

    domain: int
    server: int
    seq: int
    commit_id: int
    commit_ts_us: int

    @property
    def gtid(self) -> str:
        return f"{self.domain}-{self.server}-{self.seq}"


class NodeRefused(Exception):
    """The node answered with an error frame."""

    def __init__(self, code: int, message: str):
        super().__init__(f"error {code}: {message}")
        self.code = code
        self.message = message


def decode_response(frame: bytes, request_id: int) -> Committed:
    """Decodes a response frame (without its length prefix) to a transaction."""
    version, opcode, rid = struct.unpack_from("<BBI", frame)
    assert (version, rid) == (PROTOCOL_VERSION, request_id), (version, rid)
    body = frame[6:]
    if opcode == R_COMMITTED:
        return Committed(*struct.unpack("<IIQQQ", body))
    if opcode == R_ERROR:
        (code, length) = struct.unpack_from("<HI", body)
        raise NodeRefused(code, body[6 : 6 + length].decode())
    raise AssertionError(f"unexpected response opcode {opcode:#x}")


def spawn(args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Starts ferryd: stdout piped (it prints its ready line there), stderr appended to `log_path`."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log)


def read_ready(proc: subprocess.Popen[bytes], timeout: float, log_path: Path) -> dict | None:
    """The node's ready line (`{"event": "ready", "listen": …, "admin": …}`), or None when the process exited
    first (its exit code is then in `proc.returncode`). After `timeout` the process is killed: TimeoutError."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        readable, _, _ = select.select([proc.stdout], [], [], max(deadline - time.monotonic(), 0))
        if not readable:
            proc.kill()
            proc.wait()
            log = log_path.read_text(errors="replace")
            raise TimeoutError(f"ferryd printed no ready line within {timeout}s:\n{log}")
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            proc.wait()
            return None
        line += chunk
    ready = json.loads(line.decode().splitlines()[0])
    assert ready["event"] == "ready", ready
    return ready


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("ferryd closed the connection")
        data += chunk
    return data


def transact(
    sock: socket.socket, request_id: int, increments: list[tuple[str, str, str, int]], domain: int | None
) -> Committed:
    """Sends one Transact frame of `(table, key, field, by)` increments and reads the node's answer."""
    sock.sendall(encode_increments(request_id, increments, domain))
    (length,) = struct.unpack("<I", _recv_exact(sock, 4))
    return decode_response(_recv_exact(sock, length), request_id)


def terminate(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """SIGTERM (the node checkpoints and exits) unless it has exited already, and waits; returns the exit code, or
    None when it was still running after `timeout` and had to be killed. Closes its stdout."""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None
    finally:
        if proc.stdout is not None:
            proc.stdout.close()


class Node:
    """One ferryd process; use `start()`, then `increment()` / `flush_binlog()`, then `stop()`."""

    def __init__(self, data_dir: Path, server_id: int = 1):
        self.binary = ferryd_binary()
        self.data_dir = data_dir
        self.server_id = server_id
        self.token = "test-admin-token-0123456789"
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.request_id = 0

    @property
    def binlog_dir(self) -> Path:
        return self.data_dir / "binlog"

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / "ferryd.log"

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def start(self, timeout: float = 30.0) -> None:
        token_file = self.data_dir.parent / "admin-token"
        token_file.write_text(self.token)
        args = [
            str(self.binary),
            "--server-id", str(self.server_id),
            "--data-dir", str(self.data_dir),
            "--listen", "127.0.0.1:0",
            "--admin", "127.0.0.1:0",
            "--admin-token-file", str(token_file),
            # No periodic checkpoints: the binlog then holds what the test wrote, plus the checkpoint
            # events the node logs on its own at rotation and shutdown.
            "--checkpoint-interval-ms", "3600000",
        ]  # fmt: skip
        self.proc = spawn(args, self.log_path)
        ready = read_ready(self.proc, timeout, self.log_path)
        if ready is None:
            raise RuntimeError(f"ferryd exited with {self.proc.returncode} before it was ready:\n{self.log}")
        host, port = ready["listen"].rsplit(":", 1)
        self.admin = ready["admin"]
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)

    def increment(self, *increments: tuple[str, str, str, int], domain: int | None = None) -> Committed:
        """Commits one transaction of `(table, key, field, by)` increments and returns its acknowledgement."""
        assert self.sock is not None
        self.request_id += 1
        return transact(self.sock, self.request_id, list(increments), domain)

    def flush_binlog(self) -> str:
        """FLUSH LOGS through the admin API; returns the new binlog file's name."""
        req = urllib.request.Request(
            f"http://{self.admin}/v1/binlog/flush",
            data=b"",
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)["file"]

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (the node checkpoints and exits); returns the exit code."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is None:
            return 0
        code = terminate(self.proc, timeout)
        if code is None:
            raise TimeoutError(f"ferryd did not exit within {timeout}s of SIGTERM (killed):\n{self.log}")
        return code
