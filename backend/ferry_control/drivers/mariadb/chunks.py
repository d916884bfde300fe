"""Checksums of a MariaDB table's chunks by primary key, for comparing a replica with its source after the fact
without writing to the cluster and without locking a table.

The chunks of one call are read in one `START TRANSACTION WITH CONSISTENT SNAPSHOT … READ ONLY`: InnoDB's snapshot is
consistent with the binlog, whose position at the snapshot the server gives as `Binlog_snapshot_file` /
`Binlog_snapshot_position` and `BINLOG_GTID_POS()` turns into the GTID position the checksums belong to. Nothing is
locked (a FLUSH TABLES … WITH READ LOCK would need LOCK TABLES, which Ferry's user has not). Only transactional
(InnoDB) tables are consistent so; others are read as they are.

A chunk's checksum is the BIT_XOR of a 64-bit hash (the first 16 hex digits of MD5) of each row's columns, NULLs told
apart from empty text, with its row count; the bounds are primary-key values, compared as row values."""

from __future__ import annotations

import asyncio
from typing import Any

import pymysql

from ferry_control.core.gtid import canonical
from ferry_control.drivers.base import ChunkSum, ChunkSums, KeyValue, TableChunks
from ferry_control.drivers.errors import ServerProtocolError, ServerUnreachable
from ferry_control.drivers.mariadb.checksums import SYSTEM_SCHEMAS
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.connection import quote_ident
from ferry_control.drivers.mariadb.errors import error_for

#: Bound on one chunk's checksum statement, and (times the chunks) on one call's snapshot.
CHUNK_STATEMENT_S = 30.0


def _split(table: str) -> tuple[str, str]:
    schema, _, name = table.partition(".")
    if not schema or not name:
        raise ValueError(f"a table is named `schema.table`, not {table!r}")
    return schema, name


def _key_value(row: dict[str, Any], key: tuple[str, ...]) -> KeyValue:
    """A bound as JSON can carry it: integers stay integers, everything else is text."""
    values: list[str | int | float] = []
    for column in key:
        value = row[column]
        if isinstance(value, bytes):
            value = value.decode("utf-8", "surrogateescape")
        values.append(value if isinstance(value, int | float | str) else str(value))
    return tuple(values)


def range_condition(chunks: TableChunks, index: int) -> tuple[str, list[Any]]:
    """The WHERE condition selecting chunk `index` (row-value comparisons on the key), with its arguments."""
    lower, upper = chunks.range_of(index)
    columns = "(" + ", ".join(quote_ident(c) for c in chunks.key) + ")"
    parts: list[str] = []
    args: list[Any] = []
    for bound, op in ((lower, ">="), (upper, "<")):
        if bound is None:
            continue
        if len(bound) != len(chunks.key):
            raise ValueError(
                f"a bound of {chunks.table} has {len(bound)} values for a key of {len(chunks.key)} columns"
            )
        parts.append(f"{columns} {op} ({', '.join(['%s'] * len(bound))})")
        args.extend(bound)
    return (" AND ".join(parts) or "TRUE"), args


class MariadbChunks(MariadbServer):
    """User tables, their chunk bounds and chunk checksums."""

    async def user_tables(self) -> tuple[str, ...]:
        rows = await self.sql.query(
            "SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
            f"AND TABLE_SCHEMA NOT IN ({', '.join(repr(s) for s in SYSTEM_SCHEMAS)}) ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        return tuple(f"{r['s']}.{r['t']}" for r in rows)

    async def _primary_key(self, schema: str, name: str) -> tuple[str, ...]:
        rows = await self.sql.query(
            "SELECT COLUMN_NAME AS c FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
            (schema, name),
        )
        return tuple(str(r["c"]) for r in rows)

    async def _columns(self, schema: str, name: str) -> tuple[str, ...]:
        rows = await self.sql.query(
            "SELECT COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (schema, name),
        )
        if not rows:
            raise ServerProtocolError(self.address, "no_such_table", f"{schema}.{name} has no columns here")
        return tuple(str(r["c"]) for r in rows)

    async def chunk_bounds(self, table: str, chunk_rows: int) -> TableChunks:
        """Walks the primary key in steps of `chunk_rows` (`ORDER BY key LIMIT 1 OFFSET n` from the last bound, an
        index range read each), so no statement reads more than one chunk's keys."""
        schema, name = _split(table)
        key = await self._primary_key(schema, name)
        if not key:
            return TableChunks(table=table, key=())
        quoted = f"{quote_ident(schema)}.{quote_ident(name)}"
        columns = ", ".join(quote_ident(c) for c in key)
        bounds: list[KeyValue] = []
        while True:
            chunks = TableChunks(table=table, key=key, bounds=tuple(bounds))
            where, args = range_condition(chunks, len(bounds)) if bounds else ("TRUE", [])
            rows = await self.sql.query(
                f"SELECT {columns} FROM {quoted} WHERE {where} ORDER BY {columns} LIMIT 1 OFFSET %s",
                [*args, int(chunk_rows)],
            )
            if not rows:
                return TableChunks(table=table, key=key, bounds=tuple(bounds))
            bounds.append(_key_value(rows[0], key))

    async def chunk_checksums(self, chunks: TableChunks, indexes: tuple[int, ...]) -> ChunkSums:
        schema, name = _split(chunks.table)
        columns = await self._columns(schema, name)
        quoted = f"{quote_ident(schema)}.{quote_ident(name)}"
        row_text = "CONCAT_WS('#', {}, CONCAT({}))".format(
            ", ".join(quote_ident(c) for c in columns), ", ".join(f"ISNULL({quote_ident(c)})" for c in columns)
        )
        hashed = f"CAST(CONV(SUBSTRING(MD5({row_text}), 1, 16), 16, 10) AS UNSIGNED)"
        statements = []
        for index in indexes:
            where, args = range_condition(chunks, index) if chunks.key else ("TRUE", [])
            statements.append(
                (index, f"SELECT COUNT(*) AS n, COALESCE(BIT_XOR({hashed}), 0) AS s FROM {quoted} WHERE {where}", args)
            )
        conn = await self.sql.connect()
        try:
            async with asyncio.timeout(self.config.statement_timeout_s + CHUNK_STATEMENT_S * max(len(indexes), 1)):
                async with conn.cursor() as cur:
                    await cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                    await cur.execute(
                        "SELECT BINLOG_GTID_POS(f.VARIABLE_VALUE, p.VARIABLE_VALUE) "
                        "FROM information_schema.SESSION_STATUS f JOIN information_schema.SESSION_STATUS p "
                        "ON p.VARIABLE_NAME = 'BINLOG_SNAPSHOT_POSITION' WHERE f.VARIABLE_NAME = 'BINLOG_SNAPSHOT_FILE'"
                    )
                    found = await cur.fetchone()
                    if found is None or found[0] is None:
                        raise ServerProtocolError(
                            self.address, "no_snapshot_position",
                            "the consistent snapshot has no binlog position (is the binlog on?)",
                        )  # fmt: skip
                    position = canonical(str(found[0]))
                    sums: dict[int, ChunkSum] = {}
                    for index, statement, args in statements:
                        await cur.execute(
                            f"SET STATEMENT max_statement_time = {CHUNK_STATEMENT_S:.0f} FOR {statement}", args
                        )
                        row = await cur.fetchone()
                        sums[index] = ChunkSum(rows=int(row[0]), checksum=int(row[1]))
                    await cur.execute("COMMIT")
        except TimeoutError as e:
            raise ServerUnreachable(self.address, "timeout", f"chunk checksums of {chunks.table} took too long") from e
        except pymysql.err.MySQLError as e:  # mapped like every other statement's error
            errno = e.args[0] if e.args and isinstance(e.args[0], int) else 2013
            raise error_for(self.address, errno, str(e.args[1]) if len(e.args) > 1 else str(e)) from e
        finally:
            conn.close()
        return ChunkSums(position=position, sums=sums)
