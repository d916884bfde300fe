"""A bounded property-based run over the OpenAPI schema (schemathesis): every operation with generated valid and
invalid input, as an operator, against the app on its own database with a registered cluster whose servers do not
answer. No answer may be a 5xx — but the role checks' documented 503 (a server not holding the role) — and every
answer must match the schema (status code documented, content type, body shape)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy.ext.asyncio import create_async_engine

from ferry_control.core.config import Settings
from ferry_control.core.db import create_sessionmaker, session_scope
from ferry_control.core.security import Role
from ferry_control.main import create_app
from ferry_control.models import Cluster, Server
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.services.tokens import TokenService
from tests.conftest import TOKEN_PEPPER, empty_database
from tests.ferryd_cluster import NODE_TOKEN

#: Examples per API operation: bounded so the whole run takes well under a minute.
EXAMPLES_PER_OPERATION = 20


async def _seed(sessionmaker: Any, settings: Settings) -> str:
    async with session_scope(sessionmaker) as session:
        _, token = await TokenService(session, settings).create("fuzz-operator", Role.operator)
        cluster = await ClusterRepository(session).add(Cluster(name="fuzz"))
        for i in (1, 2):  # ports nothing listens on (discard, 9 and 19): every node call fails fast
            port = 9 if i == 1 else 19
            session.add(
                Server(cluster_id=cluster.id, name=f"s{i}", host="127.0.0.1", protocol_port=port, admin_port=port)
            )
    return token


@pytest.fixture(scope="module")
def api_schema(live_database_url: str) -> Iterator[Any]:
    settings_ = Settings(
        environment="test", database_url=live_database_url, token_pepper=TOKEN_PEPPER, node_token=NODE_TOKEN,
        collector_enabled=False, drill_scheduler_enabled=False, node_read_retries_max=0, poll_timeout_s=1.0,
        node_connect_timeout_s=0.5, operation_shutdown_grace_s=0.0,
    )  # fmt: skip
    # A pool (a connection per request costs more than the request); the seed's connections are closed right after
    # it, so that every pooled connection is opened on the loop the schema's client runs every call of the app on.
    engine = create_async_engine(live_database_url)
    sessionmaker = create_sessionmaker(engine)
    token = asyncio.run(_seed(sessionmaker, settings_))
    asyncio.run(engine.dispose())
    app = create_app(settings_, sessionmaker=sessionmaker)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    schema.config.headers = {"Authorization": f"Bearer {token}"}
    try:
        yield schema
    finally:
        asyncio.run(engine.dispose())  # closing a connection awaits nothing on its loop's reader
        empty_database(live_database_url)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.mark.long
def test_no_server_errors_and_answers_match_the_schema(api_schema: Any) -> None:
    """Each operation (but the endless SSE stream) gets `EXAMPLES_PER_OPERATION` generated cases, derandomized."""
    failures = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) > 40
    for operation in operations:
        if operation.path.endswith("/events"):
            continue

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck), database=None)  # fmt: skip
        def exercise(case: Any) -> None:
            # A proxy's role check answers 503 by design (the server does not hold the role): documented, checked.
            role_check = case.operation.path.startswith("/api/v1/roles/")
            case.call_and_validate(checks=CHECKS[1:] if role_check else CHECKS)

        try:
            exercise()
        except Exception as e:  # collect every operation's first failure, then fail once with all of them
            failures.append(f"{operation.method.upper()} {operation.path}: {e}")
    assert not failures, "\n\n".join(failures)
