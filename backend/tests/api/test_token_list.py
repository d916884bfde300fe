"""The admin's list of API tokens: newest first, active ones by default (neither revoked nor expired), the others by
state, searched by name or first characters in any case, paged back by id; bad parameters are refused (422); a
viewer or operator may not list them; `ferryctl tokens revoke` finds a token by name whatever its age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.models import ApiToken
from tests.conftest import Tokens


async def names(client: httpx.AsyncClient, tokens: Tokens, **params: Any) -> list[str]:
    response = await client.get("/api/v1/tokens", params=params, headers=tokens.header("admin"))
    assert response.status_code == 200, response.text
    return [t["name"] for t in response.json()]


async def test_tokens_are_listed_by_state_searched_and_paged(
    client: httpx.AsyncClient, tokens: Tokens, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = tokens.header("admin")
    created = {}
    for name in ("deploy.CI", "backup.ci", "grafana", "old.ci", "expired.ci"):
        response = await client.post("/api/v1/tokens", json={"name": name, "role": "viewer"}, headers=admin)
        assert response.status_code == 201, response.text
        created[name] = response.json()
    revoked = await client.post(f"/api/v1/tokens/{created['old.ci']['id']}/revoke", headers=admin)
    assert revoked.status_code == 200
    async with session_scope(sessionmaker) as session:  # one that expired an hour ago
        await session.execute(
            update(ApiToken).where(ApiToken.id == created["expired.ci"]["id"])
            .values(expires_at=datetime.now(UTC) - timedelta(hours=1))
        )  # fmt: skip
    fixture = ["test-admin", "test-operator", "test-viewer"]  # the suite's own, newest first

    active = await names(client, tokens)
    assert active == ["grafana", "backup.ci", "deploy.CI", *fixture], active
    assert await names(client, tokens, state="revoked") == ["old.ci"]
    assert await names(client, tokens, state="expired") == ["expired.ci"]
    assert len(await names(client, tokens, state="all")) == 8

    # The searches hold a "." so that no token's random first characters (URL-safe base64) can match them.
    assert await names(client, tokens, q=".Ci") == ["backup.ci", "deploy.CI"]  # any case, active only
    assert await names(client, tokens, q=".ci", state="all") == ["expired.ci", "old.ci", "backup.ci", "deploy.CI"]
    prefix = created["grafana"]["display_prefix"]
    assert await names(client, tokens, q=prefix) == ["grafana"]
    assert await names(client, tokens, q="100%_") == []  # wildcards are matched as text

    first = await names(client, tokens, state="all", limit=3)
    assert first == ["expired.ci", "old.ci", "grafana"]
    page = (await client.get("/api/v1/tokens", params={"state": "all", "limit": 3}, headers=admin)).json()
    after = await names(client, tokens, state="all", limit=3, before_id=page[-1]["id"])
    assert after == ["backup.ci", "deploy.CI", "test-admin"]


async def test_bad_list_parameters_are_refused_and_only_admins_list(client: httpx.AsyncClient, tokens: Tokens) -> None:
    for params in ({"state": "gone"}, {"limit": 0}, {"limit": 501}, {"before_id": 0}, {"q": "x" * 101}):
        response = await client.get("/api/v1/tokens", params=params, headers=tokens.header("admin"))
        assert response.status_code == 422, (params, response.text)
    for role in ("viewer", "operator"):
        assert (await client.get("/api/v1/tokens", headers=tokens.header(role))).status_code == 403
