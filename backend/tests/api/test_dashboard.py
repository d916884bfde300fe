"""The API serves the built dashboard from its own origin: assets as files, index.html for client-side routes,
and never in place of the API."""

from __future__ import annotations

from pathlib import Path

import httpx
from fastapi import FastAPI

from ferry_control.dashboard import mount_dashboard


def built(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><div id=root></div>")
    (tmp_path / "assets" / "app-1234.js").write_text("console.log('ferry')")
    (tmp_path / "favicon.svg").write_text("<svg/>")
    return tmp_path


def app_with_dashboard(directory: Path | None) -> httpx.AsyncClient:
    app = FastAPI()

    @app.get("/api/v1/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    mount_dashboard(app, directory)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ferry.test")


async def test_client_side_routes_get_the_app_and_assets_are_files(tmp_path: Path) -> None:
    client = app_with_dashboard(built(tmp_path))
    assert "id=root" in (await client.get("/")).text
    assert "id=root" in (await client.get("/clusters/1/positions")).text
    assert (await client.get("/assets/app-1234.js")).text == "console.log('ferry')"
    assert (await client.get("/favicon.svg")).text == "<svg/>"


async def test_the_api_is_never_shadowed(tmp_path: Path) -> None:
    client = app_with_dashboard(built(tmp_path))
    assert (await client.get("/api/v1/health")).json() == {"status": "ok"}
    assert (await client.get("/api/v1/no-such-thing")).status_code == 404
    assert (await client.get("/metrics")).status_code == 404


async def test_files_outside_the_dashboard_are_not_served(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("no")
    dist = tmp_path / "dist"
    dist.mkdir()
    client = app_with_dashboard(built(dist))
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/assets/%2e%2e/%2e%2e/secret.txt"):
        response = await client.get(path)
        assert response.text != "no", path


async def test_without_a_build_nothing_is_mounted() -> None:
    client = app_with_dashboard(None)
    assert (await client.get("/")).status_code == 404
