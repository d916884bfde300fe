"""Table checksums of a MariaDB server at one GTID position (CHECKSUM TABLE between two equal reads of
@@gtid_current_pos), for comparing servers."""

from __future__ import annotations

from ferry_control.core.gtid import canonical
from ferry_control.drivers.base import Checksums, TableChecksum
from ferry_control.drivers.errors import DriverError, ServerProtocolError
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.connection import quote_ident, quote_literal

#: Schemas that are the server's own, not user data (left out of checksums).
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")


class MariadbChecksums(MariadbServer):
    """Checksums of every user table."""

    async def checksums(self) -> Checksums:
        """CHECKSUM TABLE and a row count of every user table, between two reads of @@gtid_current_pos that must
        agree (else taken again, a bounded number of times): the checksums then belong to that position. Writes
        nothing, locks nothing: a server whose position keeps moving (a master under load) gives an error."""
        tables = await self.sql.query(
            "SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
            f"AND TABLE_SCHEMA NOT IN ({', '.join(repr(s) for s in SYSTEM_SCHEMAS)}) ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        names = {f"{t['s']}.{t['t']}": f"{quote_ident(str(t['s']))}.{quote_ident(str(t['t']))}" for t in tables}
        for _ in range(self.config.checksum_attempts):
            before = canonical(await self.sql.value("SELECT @@gtid_current_pos"))
            sums: dict[str, TableChecksum] = {}
            if names:
                checks = await self.sql.query(f"CHECKSUM TABLE {', '.join(names.values())}")
                counts = await self.sql.query(
                    " UNION ALL ".join(f"SELECT {quote_literal(name)} AS t, COUNT(*) AS n FROM {quoted}"
                                       for name, quoted in names.items())
                )  # fmt: skip
                rows_by_name = {str(c["t"]): int(c["n"]) for c in counts}
                for check in checks:
                    name = str(check["Table"])
                    if check.get("Checksum") is None:
                        raise ServerProtocolError(self.address, "no_checksum", f"CHECKSUM TABLE gave none for {name}")
                    sums[name] = TableChecksum(rows=rows_by_name.get(name, 0), checksum=int(check["Checksum"]))
            after = canonical(await self.sql.value("SELECT @@gtid_current_pos"))
            if before == after:
                return Checksums(position=after, tables=sums)
        raise DriverError(
            self.address, "position_moving",
            f"@@gtid_current_pos moved during each of {self.config.checksum_attempts} checksum attempts",
        )  # fmt: skip
