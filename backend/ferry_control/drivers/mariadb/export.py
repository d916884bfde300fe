"""A MariaDB server's binlog transactions between two GTID positions, exported as a replayable SQL script (what a
rejoin archives of an old master's transactions only it has, before the server is rebuilt).

MariaDB's own `mariadb-binlog` reads them from the server over the replication protocol
(`--read-from-remote-server`, as the cluster's replication user: REPLICATION SLAVE is all it needs), selected by GTID
(`--start-position` exclusive — `D-S-0` for a domain whose every transaction is wanted —, `--stop-position`
inclusive; 10.8 and later) and only in the domains `through` names (`--do-domain-ids`: a start position naming a
domain that does not move makes it fail), from the binlog file holding the first of them on (`--to-last-log`),
`--verbose` so each row change is also written out as commented pseudo-SQL. The
password goes in a defaults file readable by this process's user only, never on a command line; a configured CA
makes it TLS (`--ssl-verify-server-cert`). Its output is bounded (`bytes_max`) and its run timed; a failure names
what mariadb-binlog said."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import ClassVar

from ferry_control.core.gtid import by_domain, canonical
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.rows import split_address

#: The programs that read a binlog (MariaDB's name first, the compatibility name after).
PROGRAMS = ("mariadb-binlog", "mysqlbinlog")
#: Bound on one export's run.
EXPORT_TIMEOUT_S = 120.0
#: What of mariadb-binlog's error output a failure quotes.
STDERR_QUOTED = 500


def _program() -> str | None:
    return next((found for name in PROGRAMS if (found := shutil.which(name))), None)


def _option_text(value: str) -> str:
    """A value as an option file holds it (quoted, backslashes and quotes escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class MariadbExport(MariadbServer):
    """The binlog transactions between two positions, as SQL."""

    exports_transactions: ClassVar[bool] = True

    async def export_transactions(self, after: str, through: str, first_file: str, bytes_max: int) -> bytes:
        program = _program()
        if program is None:
            raise DriverError(
                self.address, "no_binlog_reader",
                "mariadb-binlog is not installed on the control plane's host (Debian package mariadb-client): "
                "the transactions cannot be exported",
                kind=ErrorKind.unsupported,
            )  # fmt: skip
        login = self.config.replication
        if login is None:
            raise DriverError(
                self.address, "no_replication_login",
                "no replication user is stored for this cluster: mariadb-binlog reads the binlog as one",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        if not first_file or "/" in first_file or first_file.startswith("."):
            raise DriverError(self.address, "bad_binlog_file", f"not a binlog file name: {first_file!r}")
        host, port = split_address(self.address)
        with tempfile.TemporaryDirectory(prefix="ferry-export-") as directory:
            options = Path(directory) / "login.cnf"
            lines = ["[client]", f"user={_option_text(login.user)}", f"password={_option_text(login.password)}"]
            ca = self.config.tls_ca_file
            if self.config.tls_ca and not ca:
                ca = str(Path(directory) / "ca.pem")
                Path(ca).write_text(self.config.tls_ca)
            if ca:
                lines += [f"ssl-ca={_option_text(ca)}", "ssl-verify-server-cert"]
            fd = os.open(options, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("\n".join(lines) + "\n")
            domains = sorted(by_domain(through))
            if not domains or not set(by_domain(after)) <= set(domains):
                raise DriverError(
                    self.address, "bad_export_range",
                    f"an export runs from {after!r} to {through!r}: the start names no domain the end does not",
                )  # fmt: skip
            start = [f"--start-position={canonical(after)}"] if canonical(after) else []  # "": from the start
            args = [
                program, f"--defaults-extra-file={options}", "--read-from-remote-server", f"--host={host}",
                f"--port={port}", f"--do-domain-ids={','.join(map(str, domains))}", *start,
                f"--stop-position={canonical(through)}", "--to-last-log", "--verbose", first_file,
            ]  # fmt: skip
            return await self._run(args, bytes_max)

    async def _run(self, args: list[str], bytes_max: int) -> bytes:
        process = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
        )
        assert process.stdout is not None and process.stderr is not None
        chunks: list[bytes] = []
        size = 0
        errors = asyncio.create_task(process.stderr.read())
        try:
            async with asyncio.timeout(EXPORT_TIMEOUT_S):
                while chunk := await process.stdout.read(65536):
                    size += len(chunk)
                    if size > bytes_max:
                        raise DriverError(
                            self.address, "export_too_large",
                            f"the exported transactions exceed {bytes_max} bytes: export them by hand with "
                            "mariadb-binlog",
                        )  # fmt: skip
                    chunks.append(chunk)
                code = await process.wait()
                stderr = await errors
        except TimeoutError as e:
            raise DriverError(
                self.address, "export_timeout", f"mariadb-binlog did not finish within {EXPORT_TIMEOUT_S:g} s"
            ) from e
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
            if not errors.done():
                errors.cancel()
        if code != 0:
            said = stderr.decode("utf-8", "replace").strip()[:STDERR_QUOTED]
            raise DriverError(self.address, "export_failed", f"mariadb-binlog failed (exit {code}): {said}")
        return b"".join(chunks)
