"""Fixtures: a real PostgreSQL database migrated by Alembic (one per test session), each test inside a
transaction that is rolled back at its end (the app's own commits become savepoints), the app in-process with
that session, API tokens of every role, and a real three-node ferryd cluster.

Operations run in background tasks with sessions of their own and lock rows across connections, which one rolled-back
connection cannot give: `live_app` runs the app on its own engine (a pool) against a second migrated database, with
its lifespan (runner, and collector or scheduler when asked), and empties that database afterwards.
`ferryd_factory` starts fresh three-node ferryd clusters a test may change as it likes.

The database server is named by FERRY_TEST_DATABASE_URL (`make test-backend` starts a throwaway one with
scripts/ensure-postgres.sh); without it the tests fail at once rather than skip.
"""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool
from starlette.routing import BaseRoute

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.migrate import upgrade
from ferry_control.core.security import Role
from ferry_control.main import create_app as build_app
from ferry_control.models import Base
from ferry_control.services.tokens import TokenService
from tests.ferryd_cluster import NODE_TOKEN, FerrydCluster
from tests.mariadb_cluster import MariadbCluster

TOKEN_PEPPER = "backend-tests-pepper-0123456789"
#: The key the test apps encrypt stored secrets with (Fernet, fixed so a failure can be reproduced).
SECRET_KEY = "BkgHSHV5qOCB1YrnW48gb2PwrdEuR8GMpPPpqtX34GE="
#: The webhook receivers of the tests listen on loopback, which the webhook policy refuses unless allow-listed.
LOOPBACK_WEBHOOKS = ["127.0.0.0/8"]
#: The tests' servers (ferryd, mariadbd, fakes) listen on loopback: an operator's token registers them approved.
LOOPBACK_SERVERS = ["127.0.0.0/8"]

# The cyclic garbage collector runs far less often in the test processes: a test builds an app, its engine and
# sessions and drops them, and at Python's default thresholds (700, 10, 10) each worker spent a tenth of its CPU
# collecting — tests/collection on three workers: 9.3 of 89.6 CPU-s, and 1.3 of 79.9 at these. Garbage is still
# collected, only in fewer, larger passes; nothing a test checks depends on when.
gc.set_threshold(50_000, 20, 100)

# Settings() built bare in a test (no environment given) are a developer's, not production's: the default
# environment is production, which needs real secrets.
os.environ.setdefault("FERRY_ENVIRONMENT", "development")


#: Fixtures that start replication servers (ferryd, mariadbd): `pytest --quick` leaves out the tests that use them.
REAL_SERVER_FIXTURES = frozenset(
    {"ferryd", "ferryd_factory", "mariadb", "mariadb_factory", "mariadb_pristine", "fresh_nodes"}
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="only the tests that need no replication server (ferryd, mariadbd) and are not marked long (half a"
        " minute or more): the inner loop's `make test-quick`",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "long(rank=2): a test that takes half a minute or more on a busy machine (many switchovers, a fault at every"
        " step, hundreds of seeded schedules): run before the others, the lower ranks first (rank 1: the very"
        " longest); `--quick` leaves it out",
    )


def _start_rank(item: pytest.Item) -> int:
    """When a test starts: the ranks of `long` first, every other test after (rank 3)."""
    long = item.get_closest_marker("long")
    if long is None:
        return 3
    return int(long.kwargs.get("rank", long.args[0] if long.args else 2))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The long tests first, the others in their order: the workers (scripts/test-backend.sh: one test at a time to
    # whichever worker is free) start the longest at once, and the short ones fill in around them, so no worker is
    # left running a long test alone at the end. Every worker sorts its collection the same way.
    items.sort(key=_start_rank)
    if not config.getoption("--quick"):
        return
    kept, left = [], []
    for item in items:
        needs_servers = REAL_SERVER_FIXTURES & set(getattr(item, "fixturenames", ()))
        (left if needs_servers or item.get_closest_marker("long") else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def server_url() -> str:
    url = os.environ.get("FERRY_TEST_DATABASE_URL")
    if not url:
        raise RuntimeError(
            "FERRY_TEST_DATABASE_URL is not set: run `make test-backend`, or point it at a PostgreSQL server "
            "(postgresql+psycopg://user@host/postgres) where the tests may create databases"
        )
    return url


@pytest.fixture(scope="session")
def admin_database_url() -> str:
    return server_url()


def create_database(admin_url: str, name: str) -> str:
    engine = create_sync_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with engine.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, name: str) -> None:
    engine = create_sync_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


def migrated_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A fresh database of a unique name migrated to head by Alembic, dropped when the generator ends."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    url = create_database(admin_url, name)
    try:
        upgrade(url)
        yield url
    finally:
        drop_database(admin_url, name)


@pytest.fixture(scope="session")
def database_url(admin_database_url: str) -> Iterator[str]:
    """A fresh migrated database, dropped after the session."""
    yield from migrated_database(admin_database_url, "ferry_test")


@pytest.fixture(scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def connection(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One connection in an outer transaction that is rolled back after the test."""
    async with engine.connect() as connection:
        transaction = await connection.begin()
        try:
            yield connection
        finally:
            await transaction.rollback()


@pytest.fixture
def sessionmaker(connection: AsyncConnection) -> async_sessionmaker[AsyncSession]:
    """Sessions on the test's connection; their commits release savepoints inside the outer transaction."""
    return async_sessionmaker(bind=connection, expire_on_commit=False, join_transaction_mode="create_savepoint")


@pytest.fixture
async def session(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    async with sessionmaker() as session:
        yield session


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        environment="test",
        database_url=database_url,
        token_pepper=TOKEN_PEPPER,
        secret_keys=SECRET_KEY,
        webhook_allowed_hosts=LOOPBACK_WEBHOOKS,
        server_trusted_hosts=LOOPBACK_SERVERS,
        node_token=NODE_TOKEN,
        collector_enabled=False,
        drill_scheduler_enabled=False,
        # Generous for a machine busy with the rest of the suite (the production defaults are 2 s and 5 s); the
        # tests of a slow or silent server set their own.
        poll_timeout_s=10.0,
        node_read_timeout_s=10.0,
        unreachable_after_failures=2,
        node_read_retries_max=0,
        # A rejoin's follow-up check is its own test's subject (test_consistency_check.py), not every rejoin's.
        verify_after_rejoin=False,
    )


#: Per test process, by whether the API documents itself: the route table of the first app the tests built, and its
#: OpenAPI schema once one was asked for. FastAPI compiles a route (its parameters', body's and answer's models, its
#: dependencies) the first time a request meets it, per app, and builds the schema per app: some 0.25 s of CPU for an
#: app's first requests and a second for its schema, paid again by each of the suite's hundreds of apps. Every app
#: `create_app` builds has the same routes (the settings only decide whether the documentation is served), and a
#: route reads what it needs from the app that received the request (`request.app.state`), so the later apps take the
#: first one's table, compiled once. No test overrides dependencies (the table's would be the first app's).
_ROUTES: dict[bool, list[BaseRoute]] = {}
_SCHEMAS: dict[bool, dict[str, Any]] = {}


def create_app(settings: Settings, **options: Any) -> Any:
    """`ferry_control.main.create_app`, sharing the process's compiled route table and schema (above)."""
    app = build_app(settings, **options)
    docs = settings.process.api_docs
    app.router.routes = _ROUTES.setdefault(docs, app.router.routes)
    app.openapi_schema = _SCHEMAS.get(docs)
    return app


def keep_schema(app: Any, settings: Settings) -> None:
    """Keeps the schema an app built for the apps after it."""
    if app.openapi_schema is not None:
        _SCHEMAS.setdefault(settings.process.api_docs, app.openapi_schema)


@pytest.fixture
async def app(settings: Settings, sessionmaker: async_sessionmaker[AsyncSession]):  # type: ignore[no-untyped-def]
    app = create_app(settings, sessionmaker=sessionmaker)
    yield app
    keep_schema(app, settings)
    await app.state.drivers.aclose()


@dataclass(frozen=True)
class Tokens:
    admin: str
    operator: str
    viewer: str

    def header(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self, role)}"}


@pytest.fixture
async def tokens(settings: Settings, sessionmaker: async_sessionmaker[AsyncSession]) -> Tokens:
    created = {}
    async with session_scope(sessionmaker) as session:
        service = TokenService(session, settings)
        for role in Role:
            _, created[role.value] = await service.create(f"test-{role.value}", role)
    return Tokens(**created)


@pytest.fixture
async def client(app, tokens: Tokens) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    """An operator's client."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://ferry.test", headers=tokens.header("operator")
    ) as c:
        yield c


@pytest.fixture
async def anonymous(app) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://ferry.test") as c:
        yield c


@pytest.fixture(scope="session")
def ferryd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FerrydCluster]:
    """A master and two replicas replicating from it, shared by the session's tests (which only add writes)."""
    cluster = FerrydCluster(Path(tmp_path_factory.mktemp("ferryd")))
    try:
        cluster.start()
        cluster.write(3, domains=(1, 2))
        cluster.converge()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def live_database_url(admin_database_url: str) -> Iterator[str]:
    """A second migrated database for apps that commit for real (emptied after each test that used it)."""
    yield from migrated_database(admin_database_url, "ferry_live")


def empty_database(url: str) -> None:
    """Every table emptied, but the service leases' rows (the migration creates them) are only freed."""
    engine = create_sync_engine(url, poolclass=NullPool)
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables if t.name != "service_leases")
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        connection.execute(text("UPDATE service_leases SET holder = NULL, expires_at = NULL"))
    engine.dispose()


@dataclass
class Live:
    """An app on its own engine, its lifespan running, with an operator's client and tokens of every role."""

    app: Any
    client: httpx.AsyncClient
    tokens: Tokens
    settings: Settings

    def client_as(self, role: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://ferry.test", headers=self.tokens.header(role)
        )


LiveFactory = Callable[..., AbstractAsyncContextManager[Live]]


@pytest.fixture
def live_app(live_database_url: str) -> LiveFactory:
    """`async with live_app(**settings_overrides) as live:` — the app runs for real; its database is emptied after."""

    @asynccontextmanager
    async def make(**overrides: Any) -> AsyncIterator[Live]:
        fields: dict[str, Any] = {
            "environment": "test", "database_url": live_database_url, "token_pepper": TOKEN_PEPPER,
            "secret_keys": SECRET_KEY, "webhook_allowed_hosts": LOOPBACK_WEBHOOKS,
            "server_trusted_hosts": LOOPBACK_SERVERS, "node_token": NODE_TOKEN, "collector_enabled": False,
            "drill_scheduler_enabled": False, "poll_timeout_s": 5.0, "unreachable_after_failures": 2,
            "node_read_retries_max": 0, "switchover_catch_up_timeout_s": 10.0, "verify_timeout_s": 30.0,
            "verify_after_rejoin": False,  # a rejoin's follow-up check is test_consistency_check.py's subject
            # A proxy's answer is awaited on the test's own event loop, which its load writers share: a busy machine
            # delays it past the production bound without the proxy being slow.
            "haproxy_timeout_s": 10.0,
        }  # fmt: skip
        settings = Settings(**{**fields, **overrides})
        app = create_app(settings)
        try:
            async with app.router.lifespan_context(app):
                created = {}
                async with session_scope(app.state.sessionmaker) as session:
                    service = TokenService(session, settings)
                    for role in Role:
                        _, created[role.value] = await service.create(f"live-{role.value}", role)
                tokens = Tokens(**created)
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(
                    transport=transport, base_url="http://ferry.test", headers=tokens.header("operator")
                ) as client:
                    yield Live(app, client, tokens, settings)
        finally:
            keep_schema(app, settings)
            empty_database(live_database_url)

    return make


@pytest.fixture
def ferryd_factory(tmp_path: Path) -> Iterator[Callable[..., FerrydCluster]]:
    """`ferryd_factory(extra_args=(...), master_args=(...), read_only_replicas=False, first_server_id=1)`: a fresh
    master and two replicas (stopped after the test); `master_args` go to the master only."""
    clusters: list[FerrydCluster] = []

    def make(
        extra_args: tuple[str, ...] = (),
        master_args: tuple[str, ...] = (),
        *,
        read_only_replicas: bool = False,
        first_server_id: int = 1,
    ) -> FerrydCluster:
        cluster = FerrydCluster(
            tmp_path / f"ferryd{len(clusters)}",
            extra_args,
            master_args,
            read_only_replicas=read_only_replicas,
            first_server_id=first_server_id,
        )
        clusters.append(cluster)
        cluster.start()
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.stop()


@pytest.fixture(scope="session")
def mariadb_pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this test process keeps the datadir `mariadb-install-db` makes, installed once and copied for every
    cluster (each xdist worker has its own)."""
    return tmp_path_factory.mktemp("mariadb-pristine")


@pytest.fixture
def mariadb_factory(tmp_path: Path, mariadb_pristine: Path) -> Iterator[Callable[..., MariadbCluster]]:
    """`mariadb_factory(servers=3, shape="star", **options)`: a fresh cluster of real mariadbd processes
    (tests/mariadb_cluster.py), always stopped and removed after the test."""
    clusters: list[MariadbCluster] = []

    def make(servers: int = 3, **options: Any) -> MariadbCluster:
        cluster = MariadbCluster(
            tmp_path / f"mariadb{len(clusters)}", servers, die_with_parent=True, pristine=mariadb_pristine, **options
        )
        clusters.append(cluster)
        cluster.start()
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.stop()


@pytest.fixture
def mariadb(mariadb_factory: Callable[..., MariadbCluster]) -> MariadbCluster:
    """A fresh three-server MariaDB cluster: server 1 the master, 2 and 3 replicating from it with GTID."""
    return mariadb_factory(3)
