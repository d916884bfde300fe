"""API instances for the tests that kill them: forked from one process that has loaded the control plane once, rather
than each starting a Python and importing it. A fault test starts the API twenty times (SIGKILLed after each step of
a switchover, then started again to reconcile); importing the control plane is two seconds of CPU each time, most
of what such a test costs the machine.

A forked instance is a process of its own, as one started from scratch is: its own pid, sockets, event loop and
database connections, configured through its environment before it creates the app (`uvicorn --factory
ferry_control.main:create_app`, as `make up` runs it), its output in its own log, killed by SIGKILL like any. What
it shares with its siblings is only what the import left in memory, before any of them ran: the fork server is one
thread with no event loop and no connection.

The test process speaks to the fork server over its standard input and output, one JSON object a line each way:
`{"op": "spawn", "env": {...}, "cwd": ..., "log": ..., "host": ..., "port": N}` → `{"pid": N}`, and
`{"op": "wait", "pid": N, "timeout_s": S}` → `{"returncode": R}` (null while it runs; negative: the signal that
ended it, as `subprocess.Popen.returncode` says). The server reaps its children, so only it can tell how they ended.
It stops when its standard input closes, SIGKILLing any instance still running (a test stops its own first).

    cd backend && python -m tests.api_forks     (run by ApiForks, below)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

BACKEND = Path(__file__).resolve().parents[1]


def _serve_forever() -> None:
    """The fork server: imports the control plane and uvicorn, then forks an instance per `spawn`."""
    import uvicorn

    import ferry_control.main  # noqa: F401  (what every instance would import, loaded once here)

    children: dict[int, int | None] = {}  # pid → return code once reaped

    def reap(pid: int, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while children[pid] is None:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children[pid] = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        return children[pid]

    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "spawn":
            pid = os.fork()
            if pid == 0:  # the instance
                try:
                    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    os.dup2(log, 1)
                    os.dup2(log, 2)
                    os.close(log)
                    os.close(null)
                    sys.stdin = open(0)  # noqa: SIM115  (the process's own, for as long as it lives)
                    sys.stdout = open(1, "w", buffering=1)  # noqa: SIM115
                    sys.stderr = open(2, "w", buffering=1)  # noqa: SIM115
                    os.chdir(request["cwd"])
                    os.environ.clear()
                    os.environ.update(request["env"])
                    uvicorn.run(
                        "ferry_control.main:create_app", factory=True, host=request["host"], port=request["port"],
                        log_level="warning",
                    )  # fmt: skip
                    code = 0
                except SystemExit as exit_:
                    code = exit_.code if isinstance(exit_.code, int) else 1
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    code = 1
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
            children[pid] = None
            reply: dict[str, Any] = {"pid": pid}
        elif request["op"] == "wait":
            reply = {"returncode": reap(request["pid"], request["timeout_s"])}
        else:
            reply = {"error": f"unknown op {request['op']!r}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    for pid, code in children.items():
        if code is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


class ApiForks:
    """The test process's side of one fork server (started on first use, one per test process)."""

    _shared: ApiForks | None = None

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(BACKEND)}
        self.process = subprocess.Popen(
            # As a module of the tests package from backend/: run as a script, its folder would come first on the
            # path, and tests/platform/ would hide the standard library's platform.
            [sys.executable, "-m", "tests.api_forks"],
            cwd=BACKEND,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lock = threading.Lock()

    @classmethod
    def shared(cls) -> ApiForks:
        if cls._shared is None or cls._shared.process.poll() is not None:
            cls._shared = cls()
        return cls._shared

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            stdin: IO[str] | None = self.process.stdin
            stdout: IO[str] | None = self.process.stdout
            assert stdin is not None and stdout is not None
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
            line = stdout.readline()
        assert line, f"the API fork server ended (exit {self.process.poll()})"
        reply: dict[str, Any] = json.loads(line)
        assert "error" not in reply, reply
        return reply

    def spawn(self, env: dict[str, str], cwd: Path, log: Path, host: str, port: int) -> ForkedApi:
        reply = self.ask({"op": "spawn", "env": env, "cwd": str(cwd), "log": str(log), "host": host, "port": port})
        return ForkedApi(self, int(reply["pid"]))


class ForkedApi:
    """An instance the fork server started, with what the tests use of `subprocess.Popen`."""

    def __init__(self, forks: ApiForks, pid: int) -> None:
        self.forks = forks
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.wait(0.0, raise_on_timeout=False)

    def wait(self, timeout: float, *, raise_on_timeout: bool = True) -> int | None:
        if self.returncode is None:
            self.returncode = self.forks.ask({"op": "wait", "pid": self.pid, "timeout_s": timeout})["returncode"]
        if self.returncode is None and raise_on_timeout:
            raise subprocess.TimeoutExpired(f"API instance {self.pid}", timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    _serve_forever()
