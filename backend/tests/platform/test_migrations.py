"""The Alembic migrations build the schema the models describe, on PostgreSQL and on SQLite, and come down
cleanly."""

from __future__ import annotations

import uuid
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool

from ferry_control.core.migrate import downgrade, upgrade
from ferry_control.models import Base
from tests.conftest import create_database, drop_database

TABLES = {
    "clusters", "servers", "replication_links", "position_samples", "lag_samples", "health_events", "operations",
    "operation_locks", "drill_schedules", "drill_runs", "audit_log", "api_tokens", "service_leases",
}  # fmt: skip


def sync_url(url: str) -> str:
    return url.replace("sqlite+aiosqlite://", "sqlite://")


def assert_schema_matches_models(url: str) -> None:
    engine = create_engine(sync_url(url), poolclass=NullPool)
    with engine.connect() as connection:
        assert TABLES <= set(inspect(connection).get_table_names())
        differences = compare_metadata(
            MigrationContext.configure(connection, opts={"compare_type": True}), Base.metadata
        )
    engine.dispose()
    assert differences == [], f"the migrations and the models differ: {differences}"


def assert_only_alembic_table_left(url: str) -> None:
    engine = create_engine(sync_url(url), poolclass=NullPool)
    with engine.connect() as connection:
        assert set(inspect(connection).get_table_names()) == {"alembic_version"}
    engine.dispose()


def test_migrations_build_the_models_schema_on_postgresql_and_come_down(admin_database_url: str) -> None:
    name = f"ferry_migrations_{uuid.uuid4().hex[:12]}"
    url = create_database(admin_database_url, name)
    try:
        upgrade(url)
        assert_schema_matches_models(url)
        downgrade(url)
        assert_only_alembic_table_left(url)
        upgrade(url)
        assert_schema_matches_models(url)
    finally:
        drop_database(admin_database_url, name)


def test_migrations_build_the_models_schema_on_sqlite_and_come_down(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'control.sqlite3'}"
    upgrade(url)
    assert_schema_matches_models(url)
    downgrade(url)
    assert_only_alembic_table_left(url)
    upgrade(url)
    assert_schema_matches_models(url)


def test_a_server_in_maintenance_before_reasons_were_recorded_stays_in_maintenance_with_no_end(
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'maintenance.db'}"
    upgrade(url, "0016")
    engine = create_engine(sync_url(url), poolclass=NullPool)
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO clusters (id, name, description, created_at, updated_at) "
                 "VALUES (1, 'c', '', '2026-01-01', '2026-01-01')")
        )  # fmt: skip
        for id_, name, maintenance in ((1, "kept", True), (2, "free", False)):
            connection.execute(
                text("INSERT INTO servers (id, cluster_id, name, kind, host, labels, maintenance, origin, health, "
                     "consecutive_failures, created_at, updated_at) VALUES (:id, 1, :name, 'ferry', 'h', '{}', :m, "
                     "'registered', 'unknown', 0, '2026-01-01', '2026-01-01')"),
                {"id": id_, "name": name, "m": maintenance},
            )  # fmt: skip
    upgrade(url)
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT name, maintenance, maintenance_reason, maintenance_until FROM servers ORDER BY id")
        ).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [
        ("kept", 1, "set before reasons were recorded", None),
        ("free", 0, None, None),
    ]
