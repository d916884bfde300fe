"""Rewind on a MariaDB server: refused. Cutting an old master's own transactions there would mean flashback
(`mariadb-binlog --flashback`, which needs every cut transaction logged with binlog_row_image=FULL), and that is not
built: the refusal says so, and what to do instead."""

from __future__ import annotations

from ferry_control.drivers.base import RewindOutcome
from ferry_control.drivers.errors import DriverError, ErrorKind

#: Why a MariaDB server is not rewound, and what to do instead.
REWIND_REFUSAL = (
    "MariaDB: rewind is not available; flashback with mariadb-binlog where binlog_row_image=FULL is not built — "
    "rebuild the server, or repoint by hand"
)


class MariadbRewind:
    address: str

    async def rewind(self, to: str, dry_run: bool) -> RewindOutcome:
        raise DriverError(self.address, "rewind_unsupported", REWIND_REFUSAL, kind=ErrorKind.unsupported)

    async def download_rewind_archive(self, name: str, bytes_max: int) -> bytes:
        raise DriverError(self.address, "rewind_unsupported", REWIND_REFUSAL, kind=ErrorKind.unsupported)
