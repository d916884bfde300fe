"""Drill canaries on a MariaDB server: one row per GTID domain in Ferry's own table, written on a master (never on
a read-only one) and read back on every server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

import pymysql

from ferry_control.drivers.errors import ServerProtocolError, ServerUnreachable, WriteOutcomeUnknown
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.connection import quote_ident
from ferry_control.drivers.mariadb.errors import MariadbError, ReadOnly, error_for

#: Ferry's own schema and its canary table (drills write one row per domain; Ferry's user has INSERT, CREATE there).
CANARY_SCHEMA = "ferry"
CANARY_TABLE = "canaries"


class MariadbCanaries(MariadbServer):
    """Canary writes and reads."""

    async def write_canary(self, domain: int, key: str, fields: Mapping[str, object]) -> str:
        """INSERT into ferry.canaries (created when missing) in GTID domain `domain` (SET SESSION gtid_domain_id:
        Ferry's user needs BINLOG REPLAY for it) on one connection of its own, and the GTID it got (@@last_gtid).

        Ferry's user holds READ ONLY ADMIN (for the moves), which read_only does not stop: so the write checks
        @@global.read_only inside its transaction, just before COMMIT, and refuses itself as the server would
        (`ReadOnly`, 1290) — a canary never lands on a read-only master. Only a connection lost once COMMIT was sent
        leaves the outcome unknown (`WriteOutcomeUnknown`)."""
        table = f"{quote_ident(CANARY_SCHEMA)}.{quote_ident(CANARY_TABLE)}"
        exists = await self.sql.value(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (CANARY_SCHEMA, CANARY_TABLE),
        )
        conn = await self.sql.connect()
        committing = False
        try:
            async with asyncio.timeout(self.config.statement_timeout_s + 1.0):
                async with conn.cursor() as cur:
                    if not int(exists or 0):
                        await cur.execute(
                            f"CREATE TABLE IF NOT EXISTS {table} (name VARCHAR(191) NOT NULL PRIMARY KEY, "
                            "body TEXT NOT NULL, written_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"
                        )
                    await cur.execute("SET SESSION gtid_domain_id = %s", (int(domain),))
                    await cur.execute("START TRANSACTION")
                    await cur.execute(f"INSERT INTO {table} (name, body) VALUES (%s, %s)", (key, json.dumps(fields)))
                    await cur.execute("SELECT @@global.read_only")
                    read_only = await cur.fetchone()
                    if read_only and int(read_only[0]):
                        await cur.execute("ROLLBACK")
                        raise ReadOnly(self.address, 1290, "the server is read-only: the canary was not written")
                    committing = True
                    await cur.execute("COMMIT")
                    await cur.execute("SELECT @@last_gtid")
                    row = await cur.fetchone()
        except TimeoutError as e:
            error = WriteOutcomeUnknown if committing else ServerUnreachable
            raise error(self.address, "timeout", f"canary write of {key!r} did not finish") from e
        except pymysql.err.MySQLError as e:  # mapped like every other statement's error
            errno = e.args[0] if e.args and isinstance(e.args[0], int) else 2013
            mapped = error_for(self.address, errno, str(e.args[1]) if len(e.args) > 1 else str(e))
            if committing and isinstance(mapped, ServerUnreachable):
                raise WriteOutcomeUnknown(self.address, mapped.code, mapped.message) from e
            raise mapped from e
        finally:
            conn.close()
        gtid = str(row[0]) if row else ""
        if not gtid:
            raise ServerProtocolError(self.address, "no_gtid", f"the canary {key!r} was written without a GTID")
        return gtid

    async def read_canaries(self, keys: list[str]) -> dict[str, dict[str, object] | None]:
        found: dict[str, dict[str, object] | None] = dict.fromkeys(keys)
        if not keys:
            return found
        try:
            rows = await self.sql.query(
                f"SELECT name, body FROM {quote_ident(CANARY_SCHEMA)}.{quote_ident(CANARY_TABLE)} "
                f"WHERE name IN ({', '.join(['%s'] * len(keys))})",
                tuple(keys),
            )
        except MariadbError as e:
            if e.errno == 1146:  # no canary table yet: no canary
                return found
            raise
        for row in rows:
            found[str(row["name"])] = json.loads(row["body"])
        return found
