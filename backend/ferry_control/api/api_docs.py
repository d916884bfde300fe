"""The API's documentation pages (`/docs`: Swagger UI, `/redoc`: ReDoc) served with their scripts and styles from
the installed `fastapi-offline` package under `/docs/assets`, never from a CDN: a third-party script on the
dashboard's origin could read the token the dashboard keeps there. Each page's policy allows its own inline start-up
script by its hash and nothing else inline."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: Swagger UI's and ReDoc's files, as the package ships them.
ASSETS = Path(fastapi_offline.__file__).resolve().parent / "static"
ASSETS_URL = "/docs/assets"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def page_policy(html: str) -> str:
    """The page's Content-Security-Policy: the origin's scripts and the page's own inline ones (by hash); ReDoc's
    search runs in a worker made from a blob."""
    scripts = ["'self'"] + [
        f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(html)
    ]
    return (
        f"default-src 'self'; script-src {' '.join(scripts)}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


def _page(response: HTMLResponse) -> HTMLResponse:
    html = bytes(response.body).decode()
    return HTMLResponse(html, headers={"Content-Security-Policy": page_policy(html)})


def mount_api_docs(app: FastAPI, openapi_url: str) -> None:
    """Adds /docs, /redoc and their assets to `app`."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="api-docs-assets")
    title = app.title

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return _page(
            get_swagger_ui_html(
                openapi_url=openapi_url,
                title=f"{title} - API",
                swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
                swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
                swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
                swagger_ui_parameters={"validatorUrl": None},
            )  # fmt: skip
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return _page(
            get_redoc_html(
                openapi_url=openapi_url,
                title=f"{title} - API",
                redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js",
                redoc_favicon_url=f"{ASSETS_URL}/favicon.png",
                with_google_fonts=False,
            )  # fmt: skip
        )
