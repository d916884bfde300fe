"""A cluster's host access (the SSH login of its rebuilds): only an admin sets or clears it; its private key is never
in an answer or an audit row, for any role; a key or known_hosts text that is not one is a 422 naming what is wrong;
a PUT without a key keeps the stored one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.models import AuditEntry, Cluster
from tests.api.test_clusters_servers import make_cluster
from tests.conftest import Tokens

KNOWN_HOSTS = "[db1.example]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"


def a_key(tmp_path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True)
    return (tmp_path / "k").read_text()


def body(key: str | None, **extra: object) -> dict[str, object]:
    found: dict[str, object] = {"user": "ferry", "port": 2222, "known_hosts": KNOWN_HOSTS, **extra}
    if key is not None:
        found["private_key"] = key
    return found


async def test_only_admins_set_it_and_the_key_is_never_shown(
    client: httpx.AsyncClient, tokens: Tokens, sessionmaker: async_sessionmaker[AsyncSession], tmp_path: Path
) -> None:
    cluster = await make_cluster(client, "hosts")
    url = f"/api/v1/clusters/{cluster['id']}/host-access"
    key = a_key(tmp_path)
    secret_line = key.splitlines()[1]
    for role in ("viewer", "operator"):
        refused = await client.put(url, json=body(key), headers=tokens.header(role))
        assert refused.status_code == 403, (role, refused.text)
    assert (await client.get(url)).status_code == 404
    stored = await client.put(url, json=body(key, donor_lag_pause_s=5), headers=tokens.header("admin"))
    assert stored.status_code == 200, stored.text
    read = stored.json()
    assert read["private_key_set"] is True and read["public_key_fingerprint"].startswith("SHA256:"), read
    assert (read["stop_command"], read["start_command"]) == ("systemctl stop mariadb", "systemctl start mariadb")
    assert read["donor_lag_pause_s"] == 5
    for role in ("viewer", "operator", "admin"):
        shown = await client.get(url, headers=tokens.header(role))
        assert shown.status_code == 200 and secret_line not in shown.text and "PRIVATE" not in shown.text, role
        assert shown.json()["public_key_fingerprint"] == read["public_key_fingerprint"]
        assert (
            secret_line not in (await client.get(f"/api/v1/clusters/{cluster['id']}", headers=tokens.header(role))).text
        )
    kept = await client.put(url, json=body(None, user="other"), headers=tokens.header("admin"))
    assert kept.status_code == 200 and kept.json()["private_key_set"] and kept.json()["user"] == "other", kept.text
    assert kept.json()["public_key_fingerprint"] == read["public_key_fingerprint"]
    async with session_scope(sessionmaker) as session:
        row = (await session.execute(select(Cluster).where(Cluster.id == cluster["id"]))).scalar_one()
        assert row.host_access_key_ciphertext and secret_line not in row.host_access_key_ciphertext
        assert secret_line not in str(row.host_access)
        audit = (await session.execute(select(AuditEntry))).scalars().all()
    mine = [a for a in audit if a.action == "put_host_access"]
    assert {a.status_code for a in mine} == {200, 403}, [(a.action, a.status_code) for a in mine]
    assert all(secret_line not in str(a.details) and "PRIVATE" not in str(a.details) for a in audit)
    assert any((a.details or {}).get("host_access", {}).get("private_key") == "set" for a in mine)
    assert any((a.details or {}).get("host_access", {}).get("private_key") == "kept" for a in mine)
    assert (await client.delete(url, headers=tokens.header("operator"))).status_code == 403
    assert (await client.delete(url, headers=tokens.header("admin"))).status_code == 204
    assert (await client.get(url)).status_code == 404


async def test_bad_key_or_known_hosts_is_a_precise_422(
    client: httpx.AsyncClient, tokens: Tokens, tmp_path: Path
) -> None:
    cluster = await make_cluster(client, "bad-keys")
    url = f"/api/v1/clusters/{cluster['id']}/host-access"
    admin = tokens.header("admin")
    key = a_key(tmp_path)
    cases = [
        (body("not a key"), "not a private key"),
        (body("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"), "could not be read"),
        (body(None), "private_key is required"),
        (body(key, known_hosts="db1 ssh-ed25519"), "known_hosts line 1"),
        (body(key, known_hosts="db1 ssh-foo AAAA"), "not an SSH key type"),
        (body(key, known_hosts="db1 ssh-ed25519 !!!notbase64"), "not base64"),
        (body(key, known_hosts="# only a comment\n"), "no host key"),
    ]
    for request, words in cases:
        refused = await client.put(url, json=request, headers=admin)
        assert refused.status_code == 422, (words, refused.text)
        assert words in refused.json()["error"]["message"], (words, refused.text)
        assert key.splitlines()[1] not in refused.text
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "pass", "-f", str(tmp_path / "p")], check=True)
    locked = await client.put(url, json=body((tmp_path / "p").read_text()), headers=admin)
    assert locked.status_code == 422 and "passphrase" in locked.json()["error"]["message"], locked.text
    extra = await client.put(url, json={**body(key), "private_key_file": "/x"}, headers=admin)
    assert extra.status_code == 422, extra.text
    assert (await client.get(url)).status_code == 404
