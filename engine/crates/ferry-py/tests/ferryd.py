"""A real ferryd node for tests: started on a temporary data directory, written to through its binary
protocol (the frames of ferry-core's protocol.rs), flushed through its admin HTTP API, stopped with SIGTERM.

Only the increment operation is encoded: it is enough to produce transactions with before and after images.
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
    def log(self) -> str:
        return (self.data_dir.parent / "ferryd.log").read_text(errors="replace")

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
        log = open(self.data_dir.parent / "ferryd.log", "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log)
        log.close()
        ready = self._read_ready(timeout)
        host, port = ready["listen"].rsplit(":", 1)
        self.admin = ready["admin"]
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)

    def _read_ready(self, timeout: float) -> dict:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not readable:
                self.proc.kill()
                raise TimeoutError(f"ferryd printed no ready line within {timeout}s:\n{self.log}")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError(f"ferryd exited with {self.proc.wait()} before it was ready:\n{self.log}")
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

    def increment(self, *increments: tuple[str, str, str, int], domain: int | None = None) -> Committed:
        """Commits one transaction of `(table, key, field, by)` increments and returns its acknowledgement."""
        assert self.sock is not None
        self.request_id += 1
        self.sock.sendall(encode_increments(self.request_id, list(increments), domain))
        (length,) = struct.unpack("<I", self._recv_exact(4))
        return decode_response(self._recv_exact(length), self.request_id)

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
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            assert self.proc.stdout is not None
            self.proc.stdout.close()
        return code
