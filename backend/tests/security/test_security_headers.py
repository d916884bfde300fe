"""What a browser is told about every answer of the API's origin, which also serves the dashboard (whose token is in
`localStorage`): only the origin's own scripts run, no page of another origin may frame it, nothing is sniffed into
a script. The API documentation pages load Swagger UI and ReDoc from the installed package, never from a CDN, and
allow only their own inline start-up script, by its hash."""

from __future__ import annotations

import base64
import hashlib
import re

import httpx


def directives(policy: str) -> dict[str, list[str]]:
    parsed = {}
    for part in policy.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


async def test_every_answer_forbids_framing_sniffing_and_any_script_but_the_origins(
    anonymous: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    answers = {
        "health": await anonymous.get("/api/v1/health"),
        "a refusal": await anonymous.get("/api/v1/clusters"),
        "a listing": await client.get("/api/v1/clusters"),
        "a validation error": await client.post("/api/v1/clusters", json={}),
        "the schema": await anonymous.get("/openapi.json"),
        "no such path": await anonymous.get("/api/v1/nothing-here"),
    }
    assert answers["a refusal"].status_code == 401 and answers["a validation error"].status_code == 422
    for what, response in answers.items():
        policy = directives(response.headers.get("content-security-policy", ""))
        assert policy.get("script-src") == ["'self'"], (what, response.headers)
        assert policy.get("frame-ancestors") == ["'none'"] and policy.get("object-src") == ["'none'"], what
        assert response.headers.get("x-frame-options") == "DENY", what
        assert response.headers.get("x-content-type-options") == "nosniff", what
        assert response.headers.get("referrer-policy") == "no-referrer", what


async def test_the_api_documentation_loads_nothing_from_another_origin(anonymous: httpx.AsyncClient) -> None:
    for page in ("/docs", "/redoc"):
        response = await anonymous.get(page)
        assert response.status_code == 200, (page, response.text)
        html = response.text
        sources = re.findall(r'(?:src|href|spec-url)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)
        assert len(sources) >= 2 and all(s.startswith("/") and not s.startswith("//") for s in sources), sources
        for source in sources:
            asset = await anonymous.get(source)
            assert asset.status_code == 200, (page, source)
            assert asset.headers["x-content-type-options"] == "nosniff"
            if source.endswith(".js"):
                assert asset.headers["content-type"].startswith(("text/javascript", "application/javascript"))
        assert any(s.endswith(".js") for s in sources), sources
        policy = directives(response.headers["content-security-policy"])
        inline = [
            f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
            for s in re.findall(r"<script>(.*?)</script>", html, re.DOTALL)
        ]
        assert policy["script-src"] == ["'self'", *inline], (page, policy["script-src"])
        assert policy["frame-ancestors"] == ["'none'"]
        assert not any("http" in value for values in policy.values() for value in values), policy
