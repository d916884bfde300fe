"""A MariaDB server rebuilt from a donor (`ServerDriver.rebuild_from`): mariadb-backup streamed from the donor's host
through the control plane into the recipient's data directory, over SSH (drivers/mariadb/ssh.py).

In order: the recipient is checked quiesced and its `@@datadir` read and checked safe before anything is stopped; the
donor's size estimated (its data directory less its binlogs); the recipient's server stopped (the cluster's
stop_command), its data directory emptied and marked incomplete (`MARKER`); on the donor `mariadb-backup --backup
--stream=xbstream` with the donor's registered login in a defaults file written over the SSH channel (mode 600,
removed after: no password on a command line), its stream paced (`copy_pacing`) and counted into `mbstream -x` on the
recipient; `mariadb-backup --prepare`; the marker removed; the server started (start_command) and waited for;
read-only on; its binlog reset to the backup's position (nothing of its own) and `gtid_slave_pos` set to it, read from
its binlog info file (10.11: `xtrabackup_binlog_info`, later versions `mariadb_backup_binlog_info`:
`file<TAB>offset<TAB>gtid-position`). A cancellation or a failure kills the remote commands and leaves the
recipient's server stopped with the marker in its data directory, and raises."""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import re
import shlex
import time
from collections.abc import Callable
from typing import ClassVar

import asyncssh

from ferry_control.core.gtid import GtidParseError, canonical
from ferry_control.drivers.base import CopyPhase, CopyProgress, CopyThrottle, HostAccess, RebuildSource
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.drivers.mariadb import ssh
from ferry_control.drivers.mariadb.copy_pacing import Meter, Pacer

#: Left in the recipient's data directory while its copy is incomplete (removed once the copy is prepared).
MARKER = "FERRY-REBUILD-INCOMPLETE"
#: Directories a data directory may never be (emptying one would wreck the host).
UNSAFE_DIRS = frozenset(
    {"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media", "/mnt", "/opt", "/proc",
     "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/local", "/var", "/var/lib", "/var/log",
     "/var/tmp"}
)  # fmt: skip
_SAFE_PATH = re.compile(r"^/[A-Za-z0-9_./@+-]+$")
#: Between two progress reports.
PROGRESS_EVERY_S = 0.5
#: Bounds: the server's start after the copy, the prepare, the backup's end once its stream ended.
START_WAIT_S = 300.0
PREPARE_TIMEOUT_S = 3600.0
#: The backup's binlog info files, newest name first.
BINLOG_INFO_FILES = ("mariadb_backup_binlog_info", "xtrabackup_binlog_info")


def datadir_refusal(datadir: str) -> str | None:
    """Why emptying `datadir` is refused, in words; None when it is a data directory it is safe to empty."""
    if not _SAFE_PATH.match(datadir) or "/../" in f"{datadir}/" or "/./" in f"{datadir}/":
        return f"@@datadir {datadir!r} is not a plain absolute path"
    normal = posixpath.normpath(datadir)
    if normal in UNSAFE_DIRS or normal.count("/") < 2 and normal.strip("/") in {"", "data", "mysql"}:
        return f"@@datadir {datadir!r} is a system directory: it is never emptied"
    if len([p for p in normal.split("/") if p]) < 2:
        return f"@@datadir {datadir!r} is directly under /: it is never emptied"
    return None


def parse_binlog_info(text: str) -> str:
    """The GTID position of a backup's binlog info file (`file<TAB>offset<TAB>position`; "" when it has none)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    fields = line.split("\t") if "\t" in line else line.split()
    text = fields[2].strip() if len(fields) >= 3 else ""
    try:
        return canonical(text)
    except GtidParseError as e:
        raise ValueError(f"the backup's binlog info names no GTID position: {line[:200]!r}") from e


class MariadbRebuild:
    """`rebuild_from` for the `mariadb` driver (a part of `MariadbDriver`)."""

    address: str
    kind: str

    #: A rebuild of this kind copies files over SSH: it needs the cluster's host access for donor and recipient.
    rebuild_needs_host_access: ClassVar[bool] = True

    async def rebuild_from(
        self,
        source: RebuildSource,
        *,
        throttle: CopyThrottle,
        on_progress: Callable[[CopyProgress], None],
        resume: bool = False,
    ) -> CopyProgress:
        donor = source.driver
        if donor.kind != self.kind:
            raise DriverError(self.address, "rebuild_donor_kind",
                              f"a {self.kind} server is rebuilt from a {self.kind} donor, not a {donor.kind} one",
                              kind=ErrorKind.bad_request)  # fmt: skip
        if source.donor_access is None or source.recipient_access is None:
            raise DriverError(self.address, "host_access_not_set",
                              "a MariaDB rebuild copies files over SSH: set the cluster's host access first",
                              kind=ErrorKind.not_configured)  # fmt: skip
        if resume:
            raise DriverError(self.address, "rebuild_resume_unsupported",
                              "a MariaDB rebuild cannot resume an interrupted copy: start it again without resume",
                              kind=ErrorKind.unsupported)  # fmt: skip
        copy = _Copy(self, donor, source.donor_access, source.recipient_access, throttle, on_progress)
        return await copy.run()


class _Copy:
    """One rebuild's run (see the module)."""

    def __init__(self, recipient, donor, donor_access: HostAccess, recipient_access: HostAccess,  # type: ignore[no-untyped-def]
                 throttle: CopyThrottle, on_progress: Callable[[CopyProgress], None]):  # fmt: skip
        self.recipient, self.donor = recipient, donor
        self.donor_access, self.recipient_access = donor_access, recipient_access
        self.throttle, self.on_progress = throttle, on_progress
        self.meter = Meter()
        self.phase: CopyPhase = "starting"
        self.total: int | None = None
        self.stopped = False

    def progress(self, position: str | None = None) -> CopyProgress:
        return CopyProgress(
            phase=self.phase, bytes_done=self.meter.bytes, bytes_total=self.total, rate_bytes_s=self.meter.rate(),
            paused=self.throttle.paused, position=position,
        )  # fmt: skip

    async def _report(self) -> None:
        while True:
            self.on_progress(self.progress())
            await asyncio.sleep(PROGRESS_EVERY_S)

    async def run(self) -> CopyProgress:
        status = await self.recipient.status()
        if not status.read_only or any(c.running for c in status.connections) or status.replicas:
            raise DriverError(self.recipient.address, "rebuild_not_quiesced",
                              "the recipient must be read-only, replicate from nobody and have no replica reading it",
                              kind=ErrorKind.conflict)  # fmt: skip
        datadir = str(await self.recipient.sql.value("SELECT @@datadir")).rstrip("/")
        refusal = datadir_refusal(datadir)
        if refusal is not None:
            raise DriverError(self.recipient.address, "rebuild_datadir_unsafe", refusal, kind=ErrorKind.refused)
        self.datadir = datadir
        reporter = asyncio.create_task(self._report())
        donor_conn = recipient_conn = None
        try:
            donor_conn = await ssh.connect(self.donor_access)
            recipient_conn = await ssh.connect(self.recipient_access)
            self.total = await self._estimate(donor_conn)
            await self._stop_and_empty(recipient_conn)
            await self._stream(donor_conn, recipient_conn)
            self.phase = "preparing"
            await ssh.run(recipient_conn, self.recipient_access,
                          f"mariadb-backup --prepare --target-dir={shlex.quote(datadir)}",
                          timeout_s=PREPARE_TIMEOUT_S, what="mariadb-backup --prepare")  # fmt: skip
            position = await self._position(recipient_conn)
            await ssh.run(recipient_conn, self.recipient_access, f"rm -f {shlex.quote(f'{datadir}/{MARKER}')}",
                          what="removing the incomplete-copy marker")  # fmt: skip
            self.phase = "starting_server"
            await self._start(recipient_conn, position)
            self.phase = "done"
            done = self.progress(position)
            self.on_progress(done)
            return done
        except BaseException:
            if recipient_conn is not None and self.stopped:
                await _quietly(self._leave_stopped(recipient_conn))
            raise
        finally:
            reporter.cancel()
            for conn in (donor_conn, recipient_conn):
                if conn is not None:
                    conn.close()

    async def _estimate(self, conn: asyncssh.SSHClientConnection) -> int | None:
        """The donor's data directory's size less its binlogs (what the stream carries, about); None when unknown."""
        try:
            donor_datadir = str(await self.donor.sql.value("SELECT @@datadir")).rstrip("/")
            out = await ssh.run(conn, self.donor_access, f"du -sb {shlex.quote(donor_datadir)}", what="du")
            size = int(out.split()[0])
            binlogs = 0
            with contextlib.suppress(DriverError):
                for row in await self.donor.sql.query("SHOW BINARY LOGS"):
                    binlogs += int(row.get("File_size") or 0)
            return max(size - binlogs, 1)
        except (DriverError, ValueError, IndexError):
            rows = await self.donor.sql.query(
                "SELECT COALESCE(SUM(data_length + index_length), 0) AS n FROM information_schema.tables"
            )
            return int(rows[0]["n"]) or None

    async def _stop_and_empty(self, conn: asyncssh.SSHClientConnection) -> None:
        access, d = self.recipient_access, shlex.quote(self.datadir)
        self.stopped = True  # from here on, a failure leaves it stopped (the stop may have begun)
        await ssh.run(conn, access, access.stop_command, what=f"the stop command {access.stop_command!r}")
        await ssh.run(
            conn, access,
            f"mkdir -p {d} && find {d} -mindepth 1 -delete && "
            f"echo 'a rebuild from a donor is copying into this directory; it is incomplete' > {d}/{MARKER}",
            what=f"emptying {self.datadir}",
        )  # fmt: skip

    async def _stream(
        self, donor_conn: asyncssh.SSHClientConnection, recipient_conn: asyncssh.SSHClientConnection
    ) -> None:
        login = self.donor.config.admin
        defaults = f"[client]\nuser={login.user}\npassword={login.password}\n"
        host, _, port = self.donor.address.rpartition(":")
        defaults_file = (await ssh.run(donor_conn, self.donor_access, 'umask 077; f=$(mktemp); cat > "$f"; echo "$f"',
                                       input=defaults, what="writing the backup's defaults file")).strip()  # fmt: skip
        backup = sink = None
        try:
            backup_command = (
                f"t=$(mktemp -d); trap 'rm -rf \"$t\"' EXIT; mariadb-backup "
                f"--defaults-extra-file={shlex.quote(defaults_file)} --backup --stream=xbstream "
                f'--host={shlex.quote(host)} --port={int(port)} --target-dir="$t"'
            )
            self.phase = "copying"
            sink = await ssh.Remote.start(recipient_conn, self.recipient_access,
                                          f"mbstream -x -C {shlex.quote(self.datadir)} >&2", "mbstream -x")  # fmt: skip
            backup = await ssh.Remote.start(donor_conn, self.donor_access, backup_command, "mariadb-backup --backup")
            pacer = Pacer(self.throttle)
            while True:
                size = pacer.chunk()
                await pacer.before(size)
                chunk = await backup.process.stdout.read(size)
                if not chunk:
                    break
                sink.process.stdin.write(chunk)
                await sink.process.stdin.drain()
                self.meter.add(len(chunk))
            await backup.finish()
            if not any("completed OK" in line for line in backup.stderr):
                raise DriverError(ssh.where(self.donor_access), "backup_incomplete",
                                  "mariadb-backup ended without saying `completed OK!`: "
                                  + (" | ".join(backup.stderr) or "no message"))  # fmt: skip
            sink.process.stdin.write_eof()
            await sink.finish()
        except BaseException:
            for remote in (backup, sink):
                if remote is not None:
                    await _quietly(remote.kill())
            raise
        finally:
            await _quietly(ssh.run(donor_conn, self.donor_access, f"rm -f {shlex.quote(defaults_file)}",
                                   what="removing the backup's defaults file"))  # fmt: skip

    async def _position(self, conn: asyncssh.SSHClientConnection) -> str:
        names = " ".join(shlex.quote(f"{self.datadir}/{n}") for n in BINLOG_INFO_FILES)
        command = f'for f in {names}; do [ -f "$f" ] && cat "$f" && exit 0; done; exit 1'
        text = await ssh.run(conn, self.recipient_access, command, what="reading the backup's binlog info")
        try:
            return parse_binlog_info(text)
        except ValueError as e:
            raise DriverError(self.recipient.address, "backup_position_unknown", str(e)) from e

    async def _start(self, conn: asyncssh.SSHClientConnection, position: str) -> None:
        access = self.recipient_access
        await ssh.run(conn, access, access.start_command, timeout_s=START_WAIT_S,
                      what=f"the start command {access.start_command!r}")  # fmt: skip
        deadline = time.monotonic() + START_WAIT_S
        while True:
            try:
                await self.recipient.sql.value("SELECT 1", timeout_s=5.0)
                break
            except DriverError as e:
                if time.monotonic() > deadline:
                    raise DriverError(self.recipient.address, "rebuild_start_timeout",
                                      f"the server did not answer within {START_WAIT_S:g} s of its start: {e.message}",
                                      kind=ErrorKind.unavailable) from e  # fmt: skip
                await asyncio.sleep(0.2)
        await self.recipient.set_read_only(True)
        # Its old binlog (wherever log_bin keeps it) goes: its binlog starts at the copy's position, as if it had
        # replicated up to there (log_slave_updates), so its positions are a replica's at that point.
        await self.recipient.sql.query("RESET MASTER")
        await self.recipient.sql.query("SET GLOBAL gtid_binlog_state = %s", (position,))
        await self.recipient.sql.query("SET GLOBAL gtid_slave_pos = %s", (position,))

    async def _leave_stopped(self, conn: asyncssh.SSHClientConnection) -> None:
        """After a cancellation or failure: the server stopped (again, if it had been started) and marked."""
        access, d = self.recipient_access, shlex.quote(self.datadir)
        if self.phase in ("starting_server", "done"):
            await ssh.run(conn, access, access.stop_command, what=f"the stop command {access.stop_command!r}")
        await ssh.run(conn, access, f"[ -d {d} ] && echo 'a rebuild from a donor stopped before it completed' > "
                      f"{d}/{MARKER}; true", what="marking the copy incomplete")  # fmt: skip


async def _quietly(awaitable) -> None:  # type: ignore[no-untyped-def]
    """Runs a clean-up to its end even while the caller is being cancelled; what it raises is dropped."""
    task = asyncio.ensure_future(awaitable)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            await task
        raise
    except Exception:
        pass
