"""The failed-authentication limiter behind a reverse proxy: every user behind it reaches the API from the proxy's
address, so the limit counts the client its X-Forwarded-For names — only when the proxy is one the deployment
trusts (`trusted_proxies`). Anyone else's X-Forwarded-For is ignored: a client cannot escape its limit by naming
other addresses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.client_address import TrustedProxies
from ferry_control.core.config import Settings
from ferry_control.main import create_app

PROXY = "10.9.0.5"


@asynccontextmanager
async def api_from(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], peer: str, **changes: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, int]]:
    """A client whose requests reach the app from `peer`, and the app's failure limit."""
    app = create_app(Settings(**{**settings.flat(), **changes}), sessionmaker=sessionmaker)
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://ferry.test") as client:
            yield client, app.state.settings.security.auth_failures_per_min
    finally:
        await app.state.drivers.aclose()


async def failing(client: httpx.AsyncClient, forwarded_for: str) -> int:
    response = await client.get(
        "/api/v1/clusters", headers={"Authorization": "Bearer not-a-token", "X-Forwarded-For": forwarded_for}
    )
    return response.status_code


async def test_behind_a_trusted_proxy_each_client_has_its_own_limit(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    async with api_from(settings, sessionmaker, PROXY, trusted_proxies=["10.9.0.0/24"]) as (client, limit):
        statuses = [await failing(client, "203.0.113.7") for _ in range(limit + 1)]
        assert statuses == [401] * limit + [429], statuses
        # Another user behind the same proxy is not locked out by the first one's failures.
        assert await failing(client, "203.0.113.8") == 401
        # What the user's own chain says before the proxy in front of ours is not believed: the nearest address
        # that is not a trusted proxy is the client.
        assert await failing(client, "198.51.100.1, 203.0.113.7") == 429


async def test_an_untrusted_peers_x_forwarded_for_is_ignored(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    async with api_from(settings, sessionmaker, "192.0.2.44", trusted_proxies=["10.9.0.0/24"]) as (client, limit):
        statuses = [await failing(client, f"203.0.113.{i}") for i in range(limit + 1)]
        assert statuses == [401] * limit + [429], "naming other addresses escaped the limit"


def test_the_client_is_the_nearest_untrusted_hop() -> None:
    proxies = TrustedProxies.of(["10.9.0.0/24", "fd00::/8"])
    assert proxies.client_of("10.9.0.5", ["203.0.113.7"]) == "203.0.113.7"
    assert proxies.client_of("10.9.0.5", ["203.0.113.7, 10.9.0.6"]) == "203.0.113.7"
    assert proxies.client_of("10.9.0.5", ["198.51.100.1", "203.0.113.7, 10.9.0.6"]) == "203.0.113.7"
    assert proxies.client_of("10.9.0.5", ["[2001:db8::1]"]) == "2001:db8::1"
    assert proxies.client_of("10.9.0.5", ["not-an-address, 203.0.113.7"]) == "203.0.113.7"
    assert proxies.client_of("10.9.0.5", ["203.0.113.7, garbage"]) == "10.9.0.5", "a hop that is no address stops"
    assert proxies.client_of("10.9.0.5", []) == "10.9.0.5"
    assert proxies.client_of("192.0.2.1", ["203.0.113.7"]) == "192.0.2.1"
    assert proxies.client_of(None, ["203.0.113.7"]) == "unknown"


def test_a_trusted_proxy_is_an_address_or_a_network() -> None:
    assert Settings(trusted_proxies=["10.9.0.5", "fd00::/8"]).security.trusted_proxies == ["10.9.0.5", "fd00::/8"]
    with pytest.raises(ValidationError, match="trusted_proxies: 'nginx' is neither"):
        Settings(trusted_proxies=["nginx"])
