"""A real ferryd node's process and protocol helpers for tests: the binary lookup, spawning a node and reading its
ready line, Transact frames of increments over its binary protocol (the constants are ferry-core's, through
ferry_engine), and stopping it with SIGTERM.

The backend's tests (backend/tests/ferryd_cluster.py) load this file by path, so these helpers live here once.
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
from dataclasses import dataclass
from pathlib import Path

import ferry_engine

ENGINE_DIR = Path(__file__).resolve().parents[3]

# The protocol's constants as ferry-core defines them (exported by ferry_engine), never copied by hand.
PROTOCOL_VERSION = ferry_engine.PROTOCOL_VERSION
OP_TRANSACT = ferry_engine.OPCODES["TRANSACT"]
OP_INCREMENT = ferry_engine.ROW_OP_KINDS["INCREMENT"]
R_COMMITTED = ferry_engine.OPCODES["R_COMMITTED"]
R_ERROR = ferry_engine.OPCODES["R_ERROR"]


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
