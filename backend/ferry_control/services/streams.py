"""The open event streams of this process: how many each token holds and how many in all (each capped, so a client
cannot hold the process's memory and sockets), and which of their tokens still authenticate — read for every open
stream's token in one query (the stream hub asks once per interval, `services/stream_hub.py`), instead of one query per
stream."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.core.errors import TooManyRequests
from ferry_control.repositories.tokens import TokenRepository


class StreamRegistry:
    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], per_token_max: int, total_max: int, check_s: float
    ):
        self._sessionmaker = sessionmaker
        self.per_token_max = per_token_max
        self.total_max = total_max
        self._check_s = check_s
        self._open: Counter[int] = Counter()
        self._valid: set[int] = set()
        #: Validity reads done (each one query for every open stream's token).
        self.checks = 0

    @property
    def open(self) -> int:
        return sum(self._open.values())

    def admit(self, token_id: int, token_name: str) -> None:
        """429 `too_many_streams` when `token_id`, or this instance, holds as many streams as it may; called before a
        stream opens (the count itself is taken by `held`, once the stream runs)."""
        if self._open[token_id] >= self.per_token_max:
            raise TooManyRequests(
                f"token {token_name!r} has {self._open[token_id]} event streams open, the most one token may "
                f"(events_streams_per_token_max); close one first",
                self._check_s,
                code="too_many_streams",
                details={"open": self._open[token_id], "limit": self.per_token_max, "per": "token"},
            )
        if self.open >= self.total_max:
            raise TooManyRequests(
                f"this API instance has {self.open} event streams open, the most it serves "
                "(events_streams_max); retry later or on another instance",
                5.0,
                code="too_many_streams",
                details={"open": self.open, "limit": self.total_max, "per": "instance"},
            )

    @asynccontextmanager
    async def held(self, token_id: int) -> AsyncIterator[None]:
        """Counts one stream of `token_id` while it runs."""
        self._open[token_id] += 1
        self._valid.add(token_id)  # it authenticated as the stream opened
        try:
            yield
        finally:
            self._open[token_id] -= 1
            if self._open[token_id] <= 0:
                del self._open[token_id]

    async def valid_tokens(self) -> set[int]:
        """Which of the open streams' tokens still authenticate (not revoked, not expired): one query for all of
        them, however many streams each holds."""
        await self._refresh()
        return self._valid

    async def _refresh(self) -> None:
        ids = list(self._open)
        now = datetime.now(UTC)
        async with session_scope(self._sessionmaker) as session:
            valid = await TokenRepository(session).authenticating(ids, now)
        self._valid = valid
        self.checks += 1
