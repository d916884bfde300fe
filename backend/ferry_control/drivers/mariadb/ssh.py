"""SSH to a MariaDB server's host for a rebuild (asyncssh): a login with the cluster's key, the host verified
against the cluster's `known_hosts` lines only (a host showing another key is refused; no user config, agent or
known_hosts file of the control plane's machine is read), commands run with their exit status checked, and long
commands started so that their remote pid is known and they can be killed on a cancellation."""

from __future__ import annotations

import asyncio
import re
import shlex
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import asyncssh

from ferry_control.drivers.base import HostAccess
from ferry_control.drivers.errors import DriverError, ErrorKind

#: Bound on connecting and on every short command.
CONNECT_TIMEOUT_S = 15.0
COMMAND_TIMEOUT_S = 120.0
#: The stderr lines a failure quotes.
STDERR_LINES = 12
STDERR_BLOCK = 65536
_PID = re.compile(rb"^ferry-pid (\d+)$")


def where(access: HostAccess) -> str:
    return f"{access.user}@{access.host}:{access.port}"


async def connect(access: HostAccess) -> asyncssh.SSHClientConnection:
    """An SSH connection to the host, verified against `access.known_hosts`; a `DriverError` naming why not."""
    try:
        key = asyncssh.import_private_key(access.private_key)
        known = asyncssh.import_known_hosts(access.known_hosts)
    except (asyncssh.KeyImportError, ValueError) as e:
        raise DriverError(where(access), "ssh_key_invalid", f"the cluster's SSH settings: {e}",
                          kind=ErrorKind.not_configured) from e  # fmt: skip
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            return await asyncssh.connect(
                access.host, port=access.port, username=access.user, client_keys=[key], known_hosts=known,
                config=None, agent_path=None, password=None, kbdint_auth=False, x509_trusted_certs=None,
                preferred_auth=["publickey"],
            )  # fmt: skip
    except asyncssh.HostKeyNotVerifiable as e:
        raise DriverError(
            where(access), "ssh_host_key_unknown",
            f"the host's key is not in the cluster's known_hosts (refused: {e.reason})", kind=ErrorKind.forbidden,
        ) from e  # fmt: skip
    except asyncssh.PermissionDenied as e:
        raise DriverError(where(access), "ssh_denied", f"the host refused the cluster's SSH key: {e.reason}",
                          kind=ErrorKind.unauthorized) from e  # fmt: skip
    except (OSError, TimeoutError, asyncssh.Error) as e:
        raise DriverError(where(access), "ssh_unavailable", f"cannot reach the host over SSH: {e}",
                          kind=ErrorKind.unavailable) from e  # fmt: skip


async def run(
    conn: asyncssh.SSHClientConnection, access: HostAccess, command: str, *, input: str | None = None,
    timeout_s: float = COMMAND_TIMEOUT_S, what: str,
) -> str:  # fmt: skip
    """Runs `command`; its stdout, or a `DriverError` naming `what` failed with its exit status and stderr."""
    try:
        async with asyncio.timeout(timeout_s):
            done = await conn.run(command, input=input, check=False)
    except TimeoutError as e:
        raise DriverError(where(access), "ssh_command_timeout", f"{what} did not end within {timeout_s:g} s",
                          kind=ErrorKind.timed_out) from e  # fmt: skip
    except (OSError, asyncssh.Error) as e:
        raise DriverError(where(access), "ssh_unavailable", f"{what}: {e}", kind=ErrorKind.unavailable) from e
    if done.exit_status != 0:
        stderr = str(done.stderr or "").strip()[-2000:]
        raise DriverError(where(access), "ssh_command_failed",
                          f"{what} failed (exit {done.exit_status}): {stderr or 'no message'}")  # fmt: skip
    return str(done.stdout or "")


@dataclass
class Remote:
    """A long command running on a host: its stdin/stdout as bytes, its pid (said on stderr by its wrapper), and
    the last lines of its stderr for the message of a failure."""

    access: HostAccess
    conn: asyncssh.SSHClientConnection
    process: Any
    what: str
    pid: int | None = None
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_LINES))
    _pid_known: asyncio.Event = field(default_factory=asyncio.Event)
    _reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, conn: asyncssh.SSHClientConnection, access: HostAccess, command: str, what: str) -> Remote:
        """Starts `command` in the background of a shell that says its pid and waits for it (stdin passed on)."""
        wrapped = f'exec 3<&0; {command} <&3 3<&- & p=$!; echo "ferry-pid $p" >&2; wait $p'
        try:
            process = await conn.create_process(f"sh -c {shlex.quote(wrapped)}", encoding=None)
        except (OSError, asyncssh.Error) as e:
            raise DriverError(where(access), "ssh_unavailable", f"{what}: {e}", kind=ErrorKind.unavailable) from e
        remote = cls(access, conn, process, what)
        remote._reader = asyncio.create_task(remote._read_stderr())
        return remote

    async def _read_stderr(self) -> None:
        # Read in blocks, not by line: asyncssh's readline returns at once, empty, while the channel's reading is
        # paused (its stdout read slowly — a paced copy), so a line loop would spin without yielding.
        pending = b""
        try:
            while block := await self.process.stderr.read(STDERR_BLOCK):
                *lines, pending = (pending + block).split(b"\n")
                for line in lines:
                    self._line(line)
            if pending:
                self._line(pending)
        except (OSError, asyncssh.Error):
            pass
        finally:
            self._pid_known.set()

    def _line(self, text: bytes) -> None:
        found = _PID.match(text) if self.pid is None else None
        if found:
            self.pid = int(found.group(1))
            self._pid_known.set()
        else:
            self.stderr.append(text.decode(errors="replace")[:300])

    async def finish(self, timeout_s: float = COMMAND_TIMEOUT_S) -> None:
        """Waits for its end; a `DriverError` with its stderr unless it exited 0."""
        try:
            async with asyncio.timeout(timeout_s):
                done = await self.process.wait(check=False)
                if self._reader is not None:
                    await self._reader
        except TimeoutError as e:
            said = f"{self.what} did not end within {timeout_s:g} s"
            raise DriverError(where(self.access), "ssh_command_timeout", said, kind=ErrorKind.timed_out) from e
        if done.exit_status != 0:
            said = " | ".join(self.stderr) or "no message"
            raise DriverError(where(self.access), "ssh_command_failed",
                              f"{self.what} failed (exit {done.exit_status}): {said}")  # fmt: skip

    async def kill(self) -> None:
        """Kills the remote command (by its pid) and closes its channel; never raises."""
        try:
            async with asyncio.timeout(2.0):
                await self._pid_known.wait()
            if self.pid is not None:
                async with asyncio.timeout(10.0):
                    await self.conn.run(f"kill -TERM {self.pid} 2>/dev/null; true", check=False)
        except (TimeoutError, OSError, asyncssh.Error):
            pass
        self.process.close()
        if self._reader is not None:
            self._reader.cancel()
