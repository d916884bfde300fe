"""Operation webhooks: a JSON POST to each URL, concurrently, each bounded by a timeout. A hook succeeds when it
answers 2xx; anything else (another status, no answer, a refused connection) is a failure with its reason."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class HookOutcome:
    url: str
    ok: bool
    status: int | None
    error: str | None
    duration_s: float

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "ok": self.ok, "status": self.status, "error": self.error,
                "duration_s": round(self.duration_s, 6)}  # fmt: skip


async def call_webhooks(urls: Sequence[str], payload: dict[str, Any], timeout_s: float) -> list[HookOutcome]:
    if not urls:
        return []
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        return list(await asyncio.gather(*(_call(client, url, payload) for url in urls)))


async def _call(client: httpx.AsyncClient, url: str, payload: dict[str, Any]) -> HookOutcome:
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        response = await client.post(url, json=payload)
    except httpx.HTTPError as e:
        return HookOutcome(url, False, None, f"{type(e).__name__}: {e}", loop.time() - started)
    if 200 <= response.status_code < 300:
        return HookOutcome(url, True, response.status_code, None, loop.time() - started)
    return HookOutcome(
        url, False, response.status_code, f"answered {response.status_code}: {response.text[:200]}",
        loop.time() - started,
    )  # fmt: skip
