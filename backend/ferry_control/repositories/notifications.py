"""PostgreSQL's LISTEN/NOTIFY, on connections of their own (psycopg, autocommit), as the event relay between
instances uses them (services/event_relay.py): a batch of notifications sent in one transaction, a channel
listened to, and whether a quiet listening connection still answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg


class Notifications:
    def __init__(self, connection: psycopg.AsyncConnection[Any]):
        self.connection = connection

    async def notify(self, channel: str, payloads: Sequence[str]) -> None:
        """Every payload on `channel`, in order, in one transaction (delivered together at its commit)."""
        async with self.connection.transaction(), self.connection.cursor() as cursor:
            await cursor.executemany("SELECT pg_notify(%s, %s)", [(channel, p) for p in payloads])

    async def listen(self, channel: str) -> None:
        """`channel` must be an identifier of the code's (it is not quoted)."""
        await self.connection.execute(f"LISTEN {channel}")

    async def ping(self) -> None:
        """One round trip; raises when the connection is gone."""
        await self.connection.execute("SELECT 1")
