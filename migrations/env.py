"""Alembic environment: migrates the database named by `sqlalchemy.url` (set by the caller) or by the settings
(DATABASE_URL, else the embedded SQLite file). Migrations run on a synchronous connection: psycopg 3 for
PostgreSQL, the standard sqlite3 module for SQLite (in batch mode, since SQLite cannot alter most constraints)."""

from alembic import context
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import make_url

from ferry_control.core.config import get_settings
from ferry_control.models import Base

config = context.config
target_metadata = Base.metadata


def sync_url() -> str:
    url = config.get_main_option("sqlalchemy.url") or get_settings().database.url
    parsed = make_url(url)
    if parsed.drivername == "sqlite+aiosqlite":
        parsed = parsed.set(drivername="sqlite")
        if parsed.database and parsed.database != ":memory:":
            from pathlib import Path

            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return parsed.render_as_string(hide_password=False)


def run_migrations_offline() -> None:
    url = sync_url()
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=url.startswith("sqlite"),
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(sync_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
