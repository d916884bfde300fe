"""Auth and audit: every endpoint but health needs a token; viewers are refused every state-changing route (the
test walks the OpenAPI route table); GET /me names each token's role and capabilities; tokens are stored only as
keyed hashes; each mutation leaves an audit row; the CLI prints a new token once."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.rate_limit import RateLimiter
from ferry_control.core.security import hash_token
from ferry_control.models import ApiToken, AuditEntry, Cluster
from tests.conftest import TOKEN_PEPPER, Tokens

MUTATING = {"post", "put", "patch", "delete"}


def routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every documented route, with path parameters filled with 1."""
    found = []
    for path, operations in app.openapi()["paths"].items():
        concrete = path.replace("{cluster_id}", "1").replace("{registered_server_id}", "1")
        concrete = concrete.replace("{operation_id}", "1").replace("{token_id}", "1")
        concrete = concrete.replace("{schedule_id}", "1").replace("{run_id}", "1").replace("{server}", "s1")
        concrete = concrete.replace("{archive_id}", "1")
        assert "{" not in concrete, f"unfilled path parameter in {path}"
        found += [(method, concrete) for method in operations]
    return found


async def test_every_route_but_health_needs_a_token(app: FastAPI, anonymous: httpx.AsyncClient) -> None:
    app.state.auth_failures = RateLimiter(10_000)  # every route in a row, from one address: past the default limit
    checked = 0
    for method, path in routes(app):
        if path == "/api/v1/health":
            continue
        response = await anonymous.request(method.upper(), path, json={})
        assert response.status_code == 401, f"{method.upper()} {path}: {response.status_code} {response.text}"
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == "unauthorized"
        checked += 1
    assert checked >= 15


async def test_a_wrong_or_revoked_token_is_refused(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient, tokens: Tokens
) -> None:
    wrong = await anonymous.get("/api/v1/clusters", headers={"Authorization": "Bearer ferry_not-a-real-token-at-all"})
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "unknown API token"

    created = await client.post(
        "/api/v1/tokens", json={"name": "short-lived", "role": "viewer"}, headers=tokens.header("admin")
    )
    assert created.status_code == 201
    token = created.json()["token"]
    assert (await anonymous.get("/api/v1/clusters", headers={"Authorization": f"Bearer {token}"})).status_code == 200
    revoked = await client.post(f"/api/v1/tokens/{created.json()['id']}/revoke", headers=tokens.header("admin"))
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    after = await anonymous.get("/api/v1/clusters", headers={"Authorization": f"Bearer {token}"})
    assert after.status_code == 401 and "revoked" in after.json()["error"]["message"]


async def test_viewer_gets_403_on_every_state_changing_route(
    app: FastAPI, anonymous: httpx.AsyncClient, tokens: Tokens
) -> None:
    mutating = [(m, p) for m, p in routes(app) if m in MUTATING]
    assert len(mutating) >= 8
    for method, path in mutating:
        response = await anonymous.request(method.upper(), path, json={}, headers=tokens.header("viewer"))
        assert response.status_code == 403, f"{method.upper()} {path}: {response.status_code} {response.text}"
        assert response.json()["error"]["code"] == "forbidden"


async def test_viewer_reads(anonymous: httpx.AsyncClient, tokens: Tokens) -> None:
    response = await anonymous.get("/api/v1/clusters", headers=tokens.header("viewer"))
    assert response.status_code == 200


async def test_me_needs_a_valid_token(anonymous: httpx.AsyncClient) -> None:
    missing = await anonymous.get("/api/v1/me")
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["error"]["code"] == "unauthorized"
    unknown = await anonymous.get("/api/v1/me", headers={"Authorization": "Bearer ferry_not-a-real-token-at-all"})
    assert unknown.status_code == 401 and unknown.json()["error"]["message"] == "unknown API token"


@pytest.mark.parametrize(
    ("role", "capabilities"),
    [
        ("viewer", ["can_read"]),
        ("operator", ["can_read", "can_operate"]),
        ("admin", ["can_read", "can_operate", "can_admin"]),
    ],
)
async def test_me_answers_the_tokens_name_role_and_capabilities(
    anonymous: httpx.AsyncClient, tokens: Tokens, role: str, capabilities: list[str]
) -> None:
    response = await anonymous.get("/api/v1/me", headers=tokens.header(role))
    assert response.status_code == 200, response.text
    assert response.json() == {
        "name": f"test-{role}",
        "role": role,
        "capabilities": capabilities,
        "expires_at": None,
    }


async def test_operator_may_not_manage_tokens(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/v1/tokens", json={"name": "x", "role": "admin"})
    assert response.status_code == 403


async def test_tokens_are_stored_only_as_keyed_hashes(session: AsyncSession, tokens: Tokens) -> None:
    rows = (await session.scalars(select(ApiToken))).all()
    clear = {tokens.admin, tokens.operator, tokens.viewer}
    for row in rows:
        stored = " ".join(str(getattr(row, c.key)) for c in ApiToken.__table__.columns)
        assert not any(token in stored for token in clear)
        assert row.token_hash != hashlib.sha256(tokens.admin.encode()).hexdigest()
    assert {r.token_hash for r in rows} >= {hash_token(t, TOKEN_PEPPER) for t in clear}


async def test_each_mutation_writes_one_audit_row_with_who_what_and_outcome(
    client: httpx.AsyncClient, anonymous: httpx.AsyncClient, tokens: Tokens, session: AsyncSession
) -> None:
    before = len((await session.scalars(select(AuditEntry))).all())
    created = await client.post("/api/v1/clusters", json={"name": "audited"})
    cluster_id = created.json()["id"]
    duplicate = await client.post("/api/v1/clusters", json={"name": "audited"})
    denied = await anonymous.patch(
        f"/api/v1/clusters/{cluster_id}", json={"description": "x"}, headers=tokens.header("viewer")
    )
    anonymous_call = await anonymous.delete(f"/api/v1/clusters/{cluster_id}")
    await client.get("/api/v1/clusters")  # reads are not audited
    assert (created.status_code, duplicate.status_code, denied.status_code, anonymous_call.status_code) == (
        201,
        409,
        403,
        401,
    )

    response = await client.get("/api/v1/audit", params={"limit": 4})
    entries = response.json()
    assert len((await session.scalars(select(AuditEntry))).all()) == before + 4
    assert [(e["actor"], e["action"], e["method"], e["outcome"], e["status_code"]) for e in reversed(entries)] == [
        ("test-operator", "create_cluster", "POST", "succeeded", 201),
        ("test-operator", "create_cluster", "POST", "failed", 409),
        ("test-viewer", "update_cluster", "PATCH", "denied", 403),
        (None, "delete_cluster", "DELETE", "denied", 401),
    ]
    assert entries[0]["cluster_id"] == cluster_id and entries[0]["at"]


async def test_a_clusters_audit_history_begins_when_it_was_created_even_if_its_id_was_used_before(
    client: httpx.AsyncClient, session: AsyncSession
) -> None:
    """On SQLite a deleted cluster's id is given to the next one created: the rows recorded for the old one (here
    written for the new one's id, dated before it existed) are not the new one's history."""
    cluster_id = (await client.post("/api/v1/clusters", json={"name": "reused"})).json()["id"]
    created_at = (await session.get(Cluster, cluster_id)).created_at  # type: ignore[union-attr]
    session.add(AuditEntry(at=created_at - timedelta(hours=1), actor="someone", action="delete_server",
                           method="DELETE", path=f"/api/v1/clusters/{cluster_id}/servers/9", cluster_id=cluster_id,
                           outcome="succeeded", status_code=204, details={}))  # fmt: skip
    await session.flush()
    await client.patch(f"/api/v1/clusters/{cluster_id}", json={"description": "the new one"})

    history = (await client.get("/api/v1/audit", params={"cluster_id": cluster_id})).json()
    assert [e["action"] for e in history] == ["update_cluster"], history
    everything = (await client.get("/api/v1/audit", params={"limit": 50})).json()
    assert "delete_server" in [e["action"] for e in everything], "the old row is kept, only not shown as the new one's"


def test_cli_create_token_prints_a_token_once_and_stores_its_hash(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}", "FERRY_ENVIRONMENT": "development"}
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "ferry_control.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert run("migrate").returncode == 0
    created = run("create-token", "--name", "admin", "--role", "admin")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("ferry_") and len(token) > 40
    assert token not in (tmp_path / "cli.sqlite3").read_bytes().decode(errors="replace")
    again = run("create-token", "--name", "admin", "--role", "admin")
    assert again.returncode == 1 and "exists already" in again.stderr


async def test_failed_authentications_from_one_address_are_limited(
    app: FastAPI, anonymous: httpx.AsyncClient, client: httpx.AsyncClient, session: AsyncSession
) -> None:
    """Past `auth_failures_per_min` (30) failures a minute, an address's failing requests are refused with 429 (a
    missing or malformed token before any database work) and write no audit row each but one for the address and
    interval, with their count; a valid token from the same address — many users behind one proxy — is still
    served. The limiter's clock stands still: a bucket refills by half a call a second, and on a busy machine the
    forty requests took long enough to earn some back."""
    limit = app.state.settings.security.auth_failures_per_min
    app.state.auth_failures = RateLimiter(limit, clock=lambda: 1000.0)
    statuses = [
        (await anonymous.post("/api/v1/clusters", json={"name": f"c{i}"})).status_code for i in range(limit + 10)
    ]
    assert statuses[:limit] == [401] * limit and statuses[limit:] == [429] * 10, statuses
    refused = await anonymous.get("/api/v1/clusters", headers={"Authorization": "Bearer not-a-token"})
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_failures"
    assert "too many failed authentications from" in refused.json()["error"]["message"]
    assert int(refused.headers["Retry-After"]) >= 1
    assert (await client.get("/api/v1/clusters")).status_code == 200, "a valid token is served all the same"
    rows = (await session.scalars(select(AuditEntry).where(AuditEntry.status_code.in_((401, 429))))).all()
    assert len(rows) == limit, "one audit row per failure up to the limit, none for the refusals past it"
    assert await app.state.denials.flush() == 1
    summary = (
        await session.scalars(select(AuditEntry).where(AuditEntry.action == "requests_refused_past_limit"))
    ).one()
    assert summary.details["refused"] == 10 and summary.details["client"] == "127.0.0.1", summary.details
    assert summary.status_code == 429 and summary.outcome == "denied"
