"""Database engine and sessions.

A unit of work commits in one place: `session_scope`, when the work succeeds (it rolls back when the work raises).
A request's session is one (`api/deps.py`), committed when the handler returns; background work (the collector,
operations, the monitor, the CLI) opens its own. Services and repositories never commit; the one thing a request's
service may ask of its unit of work is `release_connection`, before it waits on servers
(tests/architecture/test_layers.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from ferry_control.core.config import Settings

#: Seconds SQLite waits for a lock held by another connection before failing.
SQLITE_BUSY_TIMEOUT_S = 30


def create_engine(settings: Settings, *, background: bool = False) -> AsyncEngine:
    """An async engine for the settings' URL; SQLite gets its directory, foreign keys, the write-ahead log and a
    busy timeout. On PostgreSQL its pool is the requests' (database_pool_size) or, with `background`, the one
    reserved for the collector, operations and the monitor (database_background_pool_size)."""
    url = make_url(settings.database.url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, echo=settings.database.echo, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

        @event.listens_for(engine.sync_engine, "connect")
        def _foreign_keys_on(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            if url.database and url.database != ":memory:":
                # Write-ahead log: readers (a web process serving dashboards) never block the writer (the worker
                # recording an operation's steps), nor the writer them.
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()

        return engine
    size = settings.database.background_pool_size if background else settings.database.pool_size
    return create_async_engine(
        url, echo=settings.database.echo, pool_pre_ping=True, pool_size=size,
        max_overflow=settings.database.pool_overflow,
    )  # fmt: skip


def create_sessionmaker(bind: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(bind, expire_on_commit=False, autoflush=True)


#: `session.info` key of the callbacks `session_scope` runs once the unit of work has committed.
AFTER_COMMIT_KEY = "ferry_after_commit"


def after_commit(session: AsyncSession, callback: Callable[[], None]) -> None:
    """Runs `callback` once the session's unit of work (`session_scope`) has committed; never when it rolls back.
    How a service starts background work on rows the request creates: the work then sees them."""
    session.info.setdefault(AFTER_COMMIT_KEY, []).append(callback)


async def release_connection(session: AsyncSession) -> None:
    """Commits the request's work so far and gives its connection back to the pool (the session takes one again,
    in a new transaction, when next used): for a request about to wait on servers, so it holds no connection (on
    SQLite, no write lock) meanwhile. What was done before is kept whatever follows, so a service calls this only
    where its work so far stands on its own (tests/architecture/test_layers.py names the services that do)."""
    await session.commit()


@asynccontextmanager
async def session_scope(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One unit of work: commit on success, roll back on error; then the `after_commit` callbacks."""
    async with sessionmaker() as session:
        try:
            yield session
        except BaseException:
            session.info.pop(AFTER_COMMIT_KEY, None)
            await session.rollback()
            raise
        await session.commit()
        for callback in session.info.pop(AFTER_COMMIT_KEY, []):
            callback()
