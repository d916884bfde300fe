"""The control plane closed to abuse: no path-valued setting through the API; a cluster's secrets write-only,
encrypted at rest (with key rotation), absent from every answer, audit row, error and log line, and sent only to
that cluster's servers; server addresses and webhook targets validated (loopback, link-local, metadata, private
refused unless allow-listed; redirects not followed; answers neither stored nor read past a cap); viewers see no
webhook URL; /metrics behind a token; bounded and rate-limited interleaving reads; an event stream that ends once
its token is revoked; expiring tokens; no deleting a cluster or server under a running operation."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.pool import NullPool

from ferry_control.core.config import Settings
from ferry_control.core.db import session_scope
from ferry_control.core.secrets import SecretBox, generate_key
from ferry_control.drivers.factory import DriverFactory
from ferry_control.main import create_app
from ferry_control.models import ApiToken, Cluster, ServerKind
from ferry_control.services.audit import AuditService
from ferry_control.services.orchestrator.hooks import call_webhooks
from tests.collection.test_collector import sse_events
from tests.conftest import SECRET_KEY, LiveFactory, Tokens, empty_database
from tests.ferryd_cluster import NODE_TOKEN, FerrydCluster
from tests.helpers import WAIT_S, WebhookReceiver, register, run_operation, serve

SECRETS = {
    "node_token": "cluster-node-token-7f3a9c2e11d4",
    "db_user": "ferry-admin-user-81c2",
    "db_password": "db-password-5e0b7d9a3f",
    "replication_user": "repl-user-2c9d41",
    "replication_password": "repl-password-a17f0e6b",
    "tls_ca": "-----BEGIN CERTIFICATE-----\nMIIBfake0c4c3e\n-----END CERTIFICATE-----\n",
}


def client_for(app: FastAPI, tokens: Tokens, role: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://ferry.test", headers=tokens.header(role)
    )


def app_with(settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], **changes: Any) -> FastAPI:
    return create_app(Settings(**{**settings.flat(), **changes}), sessionmaker=sessionmaker)


def leaks(text: str) -> list[str]:
    """The secrets found in `text` (the CA by its body line, which survives JSON escaping)."""
    return [name for name, value in SECRETS.items() if (value.split("\n")[1] if "\n" in value else value) in text]


# -- credentials and secrets ------------------------------------------------------------------------------------


async def test_a_token_path_is_refused(client: httpx.AsyncClient) -> None:
    created = await client.post("/api/v1/clusters", json={"name": "p", "node_token_file": "/etc/shadow"})
    assert created.status_code == 422 and created.json()["error"]["details"][0]["loc"] == ["body", "node_token_file"]
    cluster = (await client.post("/api/v1/clusters", json={"name": "p"})).json()
    patched = await client.patch(f"/api/v1/clusters/{cluster['id']}", json={"node_token_file": "/etc/passwd"})
    assert patched.status_code == 422
    assert "node_token_file" not in cluster


async def test_secrets_are_write_only_encrypted_and_never_shown(
    client: httpx.AsyncClient, tokens: Tokens, app: FastAPI, session: AsyncSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    created = await client.post("/api/v1/clusters", json={"name": "vault", **SECRETS})
    assert created.status_code == 201, created.text
    body = created.json()
    assert all(body[f"{name}_set"] for name in SECRETS) and leaks(created.text) == []
    cluster_id = body["id"]
    seen = [created.text]
    for role in ("viewer", "operator", "admin"):
        async with client_for(app, tokens, role) as as_role:
            seen.append((await as_role.get(f"/api/v1/clusters/{cluster_id}")).text)
            seen.append((await as_role.get("/api/v1/clusters")).text)
            seen.append((await as_role.get("/api/v1/clusters/overview")).text)
    # An error about a secret names the field, never the value.
    short = await client.patch(f"/api/v1/clusters/{cluster_id}", json={"node_token": "short-tok"})
    assert short.status_code == 422 and "node_token" in short.json()["error"]["message"]
    assert "short-tok" not in short.text
    too_long = await client.patch(f"/api/v1/clusters/{cluster_id}", json={"db_password": SECRETS["db_password"] * 30})
    assert too_long.status_code == 422
    seen += [short.text, too_long.text]
    async with client_for(app, tokens, "admin") as admin:
        audit = await admin.get("/api/v1/audit", params={"limit": 100})
    assert audit.status_code == 200 and len(audit.json()) >= 3
    seen.append(audit.text)
    assert [leaks(text) for text in seen] == [[] for _ in seen]
    assert leaks(caplog.text) == []

    stored = await session.scalar(select(Cluster.credentials_ciphertext).where(Cluster.id == cluster_id))
    assert stored is not None and leaks(stored) == []
    # Rotation: a new key first, the old one still listed, opens it; after rotating, the new key alone does.
    new_key = generate_key()
    rotated_box = SecretBox([new_key, SECRET_KEY])
    assert rotated_box.decrypt(stored) == SECRETS
    rotated = rotated_box.rotate(stored)
    assert SecretBox([new_key]).decrypt(rotated) == SECRETS

    # Leaving a secret out keeps it; null removes it.
    kept = await client.patch(f"/api/v1/clusters/{cluster_id}", json={"description": "x", "tls_ca": None})
    assert kept.json()["node_token_set"] and not kept.json()["tls_ca_set"]
    await session.refresh(await session.get(Cluster, cluster_id))
    stored = await session.scalar(select(Cluster.credentials_ciphertext).where(Cluster.id == cluster_id))
    assert SecretBox([SECRET_KEY]).decrypt(stored) == {k: v for k, v in SECRETS.items() if k != "tls_ca"}


async def test_storing_a_secret_without_a_key_is_refused(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], tokens: Tokens
) -> None:
    app = app_with(settings, sessionmaker, secret_keys=None)
    async with client_for(app, tokens, "operator") as client:
        refused = await client.post("/api/v1/clusters", json={"name": "nokey", "node_token": SECRETS["node_token"]})
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "secrets_unavailable"
        assert (await client.post("/api/v1/clusters", json={"name": "nokey"})).status_code == 201
    await app.state.drivers.aclose()


async def test_a_clusters_node_token_goes_to_its_own_nodes_only(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    async with live_app(node_token=None) as live:
        own_id, own = await register(live.client, ferryd, "own", node_token=NODE_TOKEN)
        other_id, other = await register(live.client, ferryd, "other")
        refused = await run_operation(
            live.app, live.client, other_id, "read-only", {"registered_server_id": other["replica1"], "read_only": True}
        )
        assert refused["state"] == "failed" and "no_node_token" in refused["error"], refused
        done = await run_operation(
            live.app, live.client, own_id, "read-only", {"registered_server_id": own["replica1"], "read_only": True}
        )
        assert done["state"] == "succeeded", done
        assert ferryd.replica1.status()["read_only"] is True
        # The factory hands each cluster's drivers that cluster's credentials, decrypted.
        drivers: DriverFactory = live.app.state.drivers
        async with session_scope(live.app.state.sessionmaker) as session:
            own_cluster, other_cluster = await session.get(Cluster, own_id), await session.get(Cluster, other_id)
            assert drivers.credentials_for(own_cluster).node_token == NODE_TOKEN
            assert drivers.credentials_for(other_cluster).node_token is None
            assert NODE_TOKEN not in repr(drivers.credentials_for(own_cluster))


async def test_plaintext_transport_is_flagged_until_tls_is_configured(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], tokens: Tokens, client: httpx.AsyncClient
) -> None:
    plain = (await client.post("/api/v1/clusters", json={"name": "plain"})).json()
    assert plain["plaintext_transport"] is True
    app = app_with(settings, sessionmaker, node_tls_ca_file="/etc/ssl/certs/ca-certificates.crt")
    async with client_for(app, tokens, "operator") as tls_client:
        tls = await tls_client.get(f"/api/v1/clusters/{plain['id']}")
        assert tls.json()["plaintext_transport"] is False
        mariadb = await tls_client.post(
            "/api/v1/clusters", json={"name": "maria", "db_user": "u", "db_password": "p" * 8}
        )
        assert mariadb.json()["plaintext_transport"] is True  # database credentials without a CA
    driver = app.state.drivers.for_address(ServerKind.ferry, "node1.internal:7401")
    assert driver._url("/v1/status") == "https://node1.internal:7401/v1/status"
    await app.state.drivers.aclose()


# -- outbound requests ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["http://db1", "db1:3306", "db1/x", "db 1", "user@db1", "", "-db1", "256.1.1.1", "[db1]", "a..b"]
)
async def test_server_hosts_are_a_name_or_an_ip_only(client: httpx.AsyncClient, host: str) -> None:
    cluster = (await client.post("/api/v1/clusters", json={"name": "hosts"})).json()
    base = f"/api/v1/clusters/{cluster['id']}"
    refused = await client.post(f"{base}/servers", json={"host": host, "protocol_port": 7301})
    assert refused.status_code == 422, refused.text
    discovery = await client.post(f"{base}/discovery", json={"host": host, "protocol_port": 1, "admin_port": 2})
    assert discovery.status_code == 422, discovery.text


async def test_server_hosts_and_ports_accepted(client: httpx.AsyncClient) -> None:
    cluster = (await client.post("/api/v1/clusters", json={"name": "hosts-ok"})).json()
    base = f"/api/v1/clusters/{cluster['id']}/servers"
    v6 = await client.post(base, json={"host": "[fd00::5]", "protocol_port": 7301, "admin_port": 7401})
    assert v6.status_code == 201 and v6.json()["host"] == "fd00::5"
    name = await client.post(base, json={"host": "db-1.eu_west.internal", "protocol_port": 7301})
    assert name.status_code == 201
    port = await client.post(base, json={"host": "db2", "protocol_port": 65536})
    assert port.status_code == 422


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9000/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "http://10.1.2.3/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost:9/",
        "https://metadata.google.internal/",
    ],
)
async def test_local_webhooks_are_refused_unless_allow_listed(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], tokens: Tokens, url: str
) -> None:
    strict = app_with(settings, sessionmaker, webhook_allowed_hosts=[])
    async with client_for(strict, tokens, "operator") as client:
        refused = await client.post("/api/v1/clusters", json={"name": "hooks", "pre_operation_webhooks": [url]})
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "webhook_refused", refused.text
        cluster = (await client.post("/api/v1/clusters", json={"name": "hooks"})).json()
        patched = await client.patch(f"/api/v1/clusters/{cluster['id']}", json={"post_operation_webhooks": [url]})
        assert patched.status_code == 422
        schedule = await client.post(
            f"/api/v1/clusters/{cluster['id']}/drills/schedules",
            json={"name": "d", "cron": "0 3 * * *", "webhook_url": url},
        )
        assert schedule.status_code == 422, schedule.text
    await strict.state.drivers.aclose()
    allowed = app_with(
        settings, sessionmaker,
        webhook_allowed_hosts=["127.0.0.0/8", "169.254.169.254/32", "::/0", "0.0.0.0/32", "10.0.0.0/8",
                               "localhost", "metadata.google.internal"],
    )  # fmt: skip
    async with client_for(allowed, tokens, "operator") as client:
        created = await client.post("/api/v1/clusters", json={"name": "hooks2", "pre_operation_webhooks": [url]})
        assert created.status_code == 201, created.text
    await allowed.state.drivers.aclose()


async def test_webhook_calls_check_resolved_addresses_follow_no_redirect_and_keep_no_body(
    settings: Settings,
) -> None:
    receiver = WebhookReceiver()

    async def redirecting(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 307, "headers": [(b"location", target.encode())]})
        await send({"type": "http.response.body", "body": b""})

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"SECRET-IN-BODY " * 100_000})

    async with serve(receiver) as target, serve(redirecting) as redirect, serve(failing) as fail:
        port = target.rsplit(":", 1)[1]
        strict = Settings(**{**settings.flat(), "webhook_allowed_hosts": []})
        # A name is resolved when called, and refused when it resolves to loopback.
        [by_name] = await call_webhooks([f"http://localhost:{port}/hook?key=abc"], {"x": 1}, strict)
        assert not by_name.ok and "refused by the webhook policy" in by_name.error and "loopback" in by_name.error
        assert by_name.url == f"http://localhost:{port}" and receiver.calls == []
        # Allow-listed: called (by the checked address, with the name in the Host header).
        [called] = await call_webhooks([f"http://localhost:{port}/hook?key=abc"], {"x": 1}, settings)
        assert called.ok and receiver.calls == [{"x": 1}]
        # A redirect is a failure and is not followed.
        [redirected] = await call_webhooks([f"{redirect}/r"], {"x": 2}, settings)
        assert not redirected.ok and redirected.status == 307 and "not followed" in redirected.error
        assert receiver.calls == [{"x": 1}]
        # An error answer is recorded as its status line only.
        [failed] = await call_webhooks([f"{fail}/f"], {"x": 3}, settings)
        assert failed.error == "answered 500 Internal Server Error" and "SECRET" not in json.dumps(failed.as_dict())


async def test_viewers_see_no_webhook_url(client: httpx.AsyncClient, app: FastAPI, tokens: Tokens) -> None:
    hook = "http://127.0.0.1:9/hooks/s3cr3t-path?token=abc"
    cluster = await client.post(
        "/api/v1/clusters", json={"name": "redact", "pre_operation_webhooks": [hook], "post_operation_webhooks": [hook]}
    )
    assert cluster.json()["pre_operation_webhooks"] == [hook]
    cluster_id = cluster.json()["id"]
    schedule = await client.post(
        f"/api/v1/clusters/{cluster_id}/drills/schedules", json={"name": "d", "cron": "0 3 * * *", "webhook_url": hook}
    )
    assert schedule.status_code == 201, schedule.text
    async with client_for(app, tokens, "viewer") as viewer:
        texts = [
            (await viewer.get(f"/api/v1/clusters/{cluster_id}")).text,
            (await viewer.get("/api/v1/clusters")).text,
            (await viewer.get("/api/v1/clusters/overview")).text,
            (await viewer.get(f"/api/v1/clusters/{cluster_id}/drills/schedules")).text,
            (await viewer.get(f"/api/v1/clusters/{cluster_id}/drills/schedules/{schedule.json()['id']}")).text,
        ]
    assert [("s3cr3t" in t, "[redacted]" in t) for t in texts] == [(False, True)] * len(texts)


# -- least privilege --------------------------------------------------------------------------------------------


async def test_metrics_need_a_token(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], tokens: Tokens
) -> None:
    app = app_with(settings, sessionmaker, metrics_token="prometheus-scrape-token-0123")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://ferry.test") as anonymous:
        assert (await anonymous.get("/metrics")).status_code == 401
        wrong = await anonymous.get("/metrics", headers={"Authorization": "Bearer prometheus-scrape-token-9999"})
        assert wrong.status_code == 401
        scraped = await anonymous.get("/metrics", headers={"Authorization": "Bearer prometheus-scrape-token-0123"})
        assert scraped.status_code == 200 and "ferry_control_http_requests" in scraped.text
        assert (await anonymous.get("/metrics", headers=tokens.header("viewer"))).status_code == 200
    await app.state.drivers.aclose()


async def test_interleavings_are_capped_and_rate_limited(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession], tokens: Tokens
) -> None:
    app = app_with(settings, sessionmaker, interleavings_events_max=10, expensive_reads_per_min=3)
    async with client_for(app, tokens, "operator") as client, client_for(app, tokens, "viewer") as viewer:
        cluster_id = (await client.post("/api/v1/clusters", json={"name": "il"})).json()["id"]
        url = f"/api/v1/clusters/{cluster_id}/interleavings"
        too_many = await viewer.get(url, params={"limit": 11})
        assert too_many.status_code == 422 and too_many.json()["error"]["code"] == "limit_too_large"
        assert (await viewer.get(url, params={"limit": 10})).status_code == 200
        assert (await viewer.get(url, params={"limit": 10})).status_code == 200
        limited = await viewer.get(url, params={"limit": 10})
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert limited.json()["error"]["code"] == "rate_limited"
        # Per token: another token still has its own allowance.
        assert (await client.get(url, params={"limit": 10})).status_code == 200
    await app.state.drivers.aclose()


async def test_a_revoked_tokens_event_stream_ends(live_app: LiveFactory) -> None:
    async with live_app(poll_interval_s=0.2) as live:
        cluster_id = (await live.client.post("/api/v1/clusters", json={"name": "sse"})).json()["id"]
        async with live.client_as("admin") as admin, serve(live.app) as base:
            created = await admin.post("/api/v1/tokens", json={"name": "watcher", "role": "viewer"})
            watcher = created.json()
            headers = {"Authorization": f"Bearer {watcher['token']}"}
            url = f"{base}/api/v1/clusters/{cluster_id}/events"
            async with (
                httpx.AsyncClient(timeout=WAIT_S, headers=headers) as sse,
                sse.stream("GET", url) as stream,
                asyncio.timeout(WAIT_S),
            ):
                assert stream.status_code == 200
                events = sse_events(stream)
                assert (await anext(events))[0] == "subscribed"
                revoked = await admin.post(f"/api/v1/tokens/{watcher['id']}/revoke")
                assert revoked.status_code == 200
                # The stream that was open under a valid token tells its client, then ends.
                assert [name async for name, _ in events] == ["token_invalid"]


async def test_tokens_expire_and_record_their_last_use(
    client: httpx.AsyncClient, app: FastAPI, tokens: Tokens, session: AsyncSession
) -> None:
    async with client_for(app, tokens, "admin") as admin:
        past = await admin.post(
            "/api/v1/tokens", json={"name": "old", "role": "viewer", "expires_at": "2020-01-01T00:00:00Z"}
        )
        assert past.status_code == 422
        later = (datetime.now(UTC) + timedelta(days=30)).isoformat()
        created = await admin.post("/api/v1/tokens", json={"name": "ci", "role": "viewer", "expires_at": later})
        assert created.status_code == 201 and created.json()["last_used_at"] is None
        token = created.json()
        headers = {"Authorization": f"Bearer {token['token']}"}
        me = await client.get("/api/v1/me", headers=headers)
        assert me.status_code == 200
        assert datetime.fromisoformat(me.json()["expires_at"]) == datetime.fromisoformat(token["expires_at"])
        [listed] = [t for t in (await admin.get("/api/v1/tokens")).json() if t["id"] == token["id"]]
        assert listed["last_used_at"] is not None and listed["expires_at"] is not None
        await session.execute(
            update(ApiToken).where(ApiToken.id == token["id"]).values(expires_at=datetime.now(UTC) - timedelta(1))
        )
        await session.commit()
        expired = await client.get("/api/v1/me", headers=headers)
        assert expired.status_code == 401 and "expired" in expired.json()["error"]["message"]


async def test_moving_a_server_that_receives_credentials_takes_an_admin(
    client: httpx.AsyncClient, tokens: Tokens
) -> None:
    """An operator may rename or label a server, but not send its cluster's credentials somewhere else: a new host or
    port of a ferryd node (it receives the nodes' token) or of a server of a cluster with stored secrets is 403 for
    an operator, done for an admin; a server that receives nothing may move freely."""
    base = "/api/v1/clusters"
    with_secrets = (await client.post(base, json={"name": "sec", "db_user": "u", "db_password": "p"})).json()["id"]
    plain = (await client.post(base, json={"name": "plain"})).json()["id"]
    node = (await client.post(f"{base}/{plain}/servers", json={"host": "10.0.0.1", "protocol_port": 7301})).json()
    maria = (await client.post(f"{base}/{with_secrets}/servers",
                               json={"kind": "mariadb", "host": "10.0.0.2", "protocol_port": 3306})).json()  # fmt: skip
    for cluster_id, server in ((plain, node), (with_secrets, maria)):
        url = f"{base}/{cluster_id}/servers/{server['id']}"
        refused = await client.patch(url, json={"host": "203.0.113.9"})
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "address_change_needs_admin"
        assert "sends its cluster's credentials to the new address" in refused.json()["error"]["message"]
        assert (await client.get(url)).json()["host"] == server["host"], "nothing changed"
        assert (await client.patch(url, json={"labels": {"rack": "r1"}})).status_code == 200
        moved = await client.patch(url, json={"host": "10.0.0.9"}, headers=tokens.header("admin"))
        assert moved.status_code == 200 and moved.json()["host"] == "10.0.0.9"
    bare = (await client.post(f"{base}/{plain}/servers",
                              json={"kind": "mariadb", "host": "10.0.0.3", "protocol_port": 3306})).json()  # fmt: skip
    assert (await client.patch(f"{base}/{plain}/servers/{bare['id']}", json={"protocol_port": 3307})).status_code == 200


async def test_deleting_during_an_operation_is_a_conflict(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    called, release = asyncio.Event(), asyncio.Event()

    async def hold(_: dict[str, Any]) -> int:
        called.set()
        await release.wait()
        return 200

    receiver = WebhookReceiver(hold)
    async with serve(receiver) as hook_url, live_app() as live:
        cluster_id, ids = await register(live.client, ferryd, pre_operation_webhooks=[hook_url])
        started = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/operations/switchover",
            json={"candidate_registered_server_id": ids["replica1"]},
        )
        assert started.status_code == 202, started.text
        async with asyncio.timeout(WAIT_S):
            await called.wait()  # the operation runs: its pre-operation hook is being called
        cluster = await live.client.delete(f"/api/v1/clusters/{cluster_id}")
        server = await live.client.delete(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}")
        changed = await live.client.patch(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}",
                                          json={"labels": {"rack": "r9"}})  # fmt: skip
        for refused in (cluster, server, changed):
            assert refused.status_code == 409 and refused.json()["error"]["code"] == "operation_running"
            assert refused.json()["error"]["details"]["operation_id"] == started.json()["id"]
        release.set()
        async with asyncio.timeout(WAIT_S):
            await live.app.state.runner.wait(started.json()["id"])
        assert (await live.client.delete(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}")).status_code == 204
        assert (await live.client.delete(f"/api/v1/clusters/{cluster_id}")).status_code == 204


def test_key_rotation_and_expiring_tokens_from_the_command_line(live_database_url: str) -> None:
    def cli(*args: str, keys: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "DATABASE_URL": live_database_url, "FERRY_ENVIRONMENT": "development",
               "FERRY_SECRET_KEYS": keys}  # fmt: skip
        return subprocess.run(
            [sys.executable, "-m", "ferry_control.cli", *args], env=env, capture_output=True, text=True, timeout=120
        )

    new_key = cli("generate-secret-key", keys=SECRET_KEY).stdout.strip()
    assert SecretBox([new_key]).decrypt(SecretBox([new_key]).encrypt({"k": "v"})) == {"k": "v"}
    engine = create_sync_engine(live_database_url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO clusters (name, description, auto_failover, pre_operation_webhooks, "
                     "post_operation_webhooks, credentials_ciphertext, created_at, updated_at) "
                     "VALUES ('rot', '', false, '[]', '[]', :c, now(), now())"),
                {"c": SecretBox([SECRET_KEY]).encrypt(SECRETS)},
            )  # fmt: skip
        rotated = cli("rotate-secrets", keys=f"{new_key},{SECRET_KEY}")
        assert rotated.returncode == 0 and "secrets of 1 clusters" in rotated.stderr, rotated.stderr
        with engine.connect() as connection:
            stored = connection.execute(text("SELECT credentials_ciphertext FROM clusters WHERE name = 'rot'")).scalar()
        assert SecretBox([new_key]).decrypt(stored) == SECRETS
        assert cli("rotate-secrets", keys=generate_key()).returncode == 1  # a key that opens nothing: refused
        token = cli("create-token", "--name", "ci", "--role", "viewer", "--expires-in-days", "2", keys=SECRET_KEY)
        assert token.returncode == 0 and token.stdout.startswith("ferry_"), token.stderr
        with engine.connect() as connection:
            expires_at = connection.execute(text("SELECT expires_at FROM api_tokens WHERE name = 'ci'")).scalar()
        assert timedelta(days=1) < expires_at - datetime.now(UTC) <= timedelta(days=2)
    finally:
        engine.dispose()
        empty_database(live_database_url)


async def test_every_change_is_audited_or_not_made(client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit row is written in the change's own transaction: a path longer than its column (a zero-padded id)
    is cut, never refused, so the change and its row land together; and when the row cannot be written at all, the
    change does not land either."""
    cluster = (await client.post("/api/v1/clusters", json={"name": "audited"})).json()
    padded = f"/api/v1/clusters/{str(cluster['id']).zfill(600)}"
    changed = await client.patch(padded, json={"description": "moved to rack 4"})
    assert changed.status_code == 200, changed.text
    rows = (await client.get("/api/v1/audit", params={"limit": 5})).json()
    row = next(r for r in rows if r["method"] == "PATCH")
    assert len(row["path"]) == 500 and row["path"].endswith("…") and row["status_code"] == 200, row

    async def unwritable(*_: Any, **__: Any) -> None:
        raise RuntimeError("the audit log cannot be written")

    monkeypatch.setattr(AuditService, "record", unwritable)
    with pytest.raises(RuntimeError, match="cannot be written"):
        await client.patch(f"/api/v1/clusters/{cluster['id']}", json={"description": "never"})
    monkeypatch.undo()
    assert (await client.get(f"/api/v1/clusters/{cluster['id']}")).json()["description"] == "moved to rack 4"


async def test_request_bodies_are_capped_before_they_are_parsed(client: httpx.AsyncClient) -> None:
    """A body over request_body_bytes_max (1 MiB by default) is refused with 413 naming the limit — declared
    (Content-Length) or streamed without one — and nothing is created."""
    huge = b'{"name": "big", "description": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    declared = await client.post("/api/v1/clusters", content=huge, headers={"Content-Type": "application/json"})
    assert declared.status_code == 413, declared.text
    assert declared.json()["error"]["code"] == "body_too_large" and "request_body_bytes_max" in declared.text

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(huge), 65536):
            yield huge[start : start + 65536]

    streamed = await client.post("/api/v1/clusters", content=chunks(), headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413, streamed.text
    assert all(c["name"] != "big" for c in (await client.get("/api/v1/clusters")).json())


async def test_the_api_documentation_can_be_turned_off(live_app: LiveFactory, anonymous: httpx.AsyncClient) -> None:
    """Served without a token by default (the API's shape, no data); `api_docs` false serves none of it."""
    assert (await anonymous.get("/openapi.json")).status_code == 200
    async with live_app(api_docs=False) as live:
        async with live.client_as("admin") as admin:
            for path in ("/docs", "/redoc", "/openapi.json"):
                assert (await admin.get(path)).status_code == 404, path
