"""Serves the built dashboard (`frontend/dist`) from the API's own origin, so the browser needs no CORS and no
base URL: the content-hashed assets as static files, and `index.html` for every other GET that is not the API,
the metrics or the API docs (client-side routes such as `/clusters/1/positions` then load the app).

The directory is `FERRY_DASHBOARD_DIR` when set, else `frontend/dist` of this checkout; without a built
`index.html` nothing is mounted and the API works alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

#: Paths the dashboard must never shadow.
RESERVED_PREFIXES = ("api/", "api", "metrics", "docs", "redoc", "openapi.json")


def dashboard_dir() -> Path | None:
    """Where the built dashboard is, if anywhere."""
    configured = os.environ.get("FERRY_DASHBOARD_DIR")
    directory = Path(configured) if configured else Path(__file__).resolve().parents[2] / "frontend" / "dist"
    return directory if (directory / "index.html").is_file() else None


def mount_dashboard(app: FastAPI, directory: Path | None) -> None:
    """Adds the dashboard's routes; call it after every API route is registered."""
    if directory is None:
        return
    root = directory.resolve()
    index = root / "index.html"
    if (root / "assets").is_dir():
        app.mount("/assets", StaticFiles(directory=root / "assets"), name="dashboard-assets")

    @app.get("/{path:path}", include_in_schema=False)
    async def dashboard(path: str) -> FileResponse:
        if path.startswith(RESERVED_PREFIXES):
            raise HTTPException(status_code=404, detail=f"no such endpoint: /{path}")
        candidate = (root / path).resolve()
        if path and candidate.is_file() and root in candidate.parents:
            return FileResponse(candidate)
        return FileResponse(index, headers={"Cache-Control": "no-cache"})
