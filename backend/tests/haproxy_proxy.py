"""A private HAProxy for tests: started from a configuration Ferry rendered, in a directory of its own, in the
foreground (`-db`) with the checks' API token in its environment, and stopped by its pid. `stat(backend)` reads each
server's status from the admin socket."""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.helpers import stop_process

WAIT_S = 30.0


def haproxy_program() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    assert found, "haproxy is not installed (scripts/ensure-haproxy.sh installs it)"
    return found


class Haproxy:
    def __init__(self, directory: Path, config: str, token: str):
        directory.mkdir(parents=True, exist_ok=True)
        self.config = directory / "haproxy.cfg"
        self.config.write_text(config)
        self.socket = next(line.split()[2] for line in config.splitlines() if line.strip().startswith("stats socket"))
        self._log = (directory / "haproxy.log").open("w")
        self._env = {**os.environ, "FERRY_CHECK_TOKEN": token}
        self.process: subprocess.Popen[bytes] | None = None

    def check(self) -> subprocess.CompletedProcess[str]:
        """`haproxy -c`: the configuration's own check."""
        return subprocess.run([haproxy_program(), "-c", "-f", str(self.config)], env=self._env, capture_output=True,
                              text=True, timeout=WAIT_S)  # fmt: skip

    def start(self) -> Haproxy:
        self.process = subprocess.Popen([haproxy_program(), "-db", "-f", str(self.config)], env=self._env,
                                        stdout=self._log, stderr=subprocess.STDOUT)  # fmt: skip
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                self.command("show info")
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"haproxy did not open its admin socket; see {self._log.name}") from None
                time.sleep(0.02)

    def command(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(self.socket)
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def stat(self, backend: str) -> dict[str, str]:
        """Each server of the backend: its status as `show stat` says it (UP, DOWN, DRAIN, MAINT, …)."""
        text = self.command("show stat").lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {
            r["svname"]: r["status"]
            for r in rows
            if r["pxname"] == backend and r["svname"] not in ("FRONTEND", "BACKEND")
        }

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, WAIT_S)
        self._log.close()
