"""PostgreSQL's session-level advisory locks, on a connection of their own (psycopg, autocommit), as the cluster share
takes them (services/collection/share.py): the live sessions of an application name, a lock tried and given back,
and whether the session still answers (its locks are held as long as it does)."""

from __future__ import annotations

from typing import Any

import psycopg


class AdvisoryLocks:
    def __init__(self, connection: psycopg.AsyncConnection[Any]):
        self.connection = connection

    async def sessions_named(self, prefix: str) -> int | None:
        """How many sessions of this database have an application name starting with `prefix` (None: no answer)."""
        cursor = await self.connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE %s AND datname = current_database()",
            (prefix + "%",),
        )
        row = await cursor.fetchone()
        return int(row[0]) if row else None

    async def unlock(self, key: int, subkey: int) -> None:
        await self.connection.execute("SELECT pg_advisory_unlock(%s, %s)", (key, subkey))

    async def try_lock(self, key: int, subkey: int) -> bool:
        """Takes the lock if no other session holds it; True when this session holds it now."""
        cursor = await self.connection.execute("SELECT pg_try_advisory_lock(%s, %s)", (key, subkey))
        taken = await cursor.fetchone()
        return bool(taken and taken[0])

    async def ping(self) -> None:
        """One round trip; raises when the session is gone."""
        await self.connection.execute("SELECT 1")
