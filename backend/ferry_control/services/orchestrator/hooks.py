"""Operation webhooks: a JSON POST to each URL, concurrently, each bounded by a timeout. A hook succeeds when it
answers 2xx; anything else (another status, a redirect — never followed —, no answer, a refused connection, a
target the webhook policy refuses) is a failure with its reason.

Each call resolves the URL's host, checks every address against the policy (core/outbound.py) and connects to the
checked address (the URL's host still goes in the Host header and TLS's server name). At most
`webhook_response_bytes_max` bytes of the answer are read and none kept: an outcome records the status line, and
the URL only as scheme://host:port (paths and queries often hold a secret)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from ferry_control.core.config import Settings
from ferry_control.core.outbound import WebhookPolicy, parse_ip, redact_url


@dataclass(frozen=True)
class HookOutcome:
    #: The target as scheme://host:port only.
    url: str
    ok: bool
    status: int | None
    error: str | None
    duration_s: float

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "ok": self.ok, "status": self.status, "error": self.error,
                "duration_s": round(self.duration_s, 6)}  # fmt: skip


class WebhookRefused(Exception):
    """The target is not allowed by the webhook policy."""


async def call_webhooks(urls: Sequence[str], payload: dict[str, Any], settings: Settings) -> list[HookOutcome]:
    if not urls:
        return []
    policy = WebhookPolicy.of(settings.webhooks.allowed_hosts)
    async with httpx.AsyncClient(timeout=settings.webhooks.timeout_s, follow_redirects=False) as client:
        return list(
            await asyncio.gather(
                *(_call(client, policy, url, payload, settings.webhooks.response_bytes_max) for url in urls)
            )
        )


async def resolve_checked(policy: WebhookPolicy, url: str) -> list[str | None]:
    """The addresses to try for `url`, once every address its host resolves to passed the policy; [None] when the
    host is an allow-listed name (connect by name). Raises WebhookRefused."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if policy.name_allowed(host):
        return [None]
    literal = parse_ip(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            raise WebhookRefused(f"cannot resolve {host}: {e}") from e
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise WebhookRefused(f"{host} resolves to no address")
    for address in addresses:
        ip = parse_ip(address.split("%", 1)[0])
        refusal = policy.refusal_for_address(ip) if ip is not None else f"{address} is not an IP address"
        if refusal is not None:
            raise WebhookRefused(f"refused by the webhook policy: {host} → {refusal}")
    return list(addresses)


async def _call(
    client: httpx.AsyncClient, policy: WebhookPolicy, url: str, payload: dict[str, Any], bytes_max: int
) -> HookOutcome:
    loop = asyncio.get_running_loop()
    started = loop.time()
    target = redact_url(url)
    try:
        addresses = await resolve_checked(policy, url)
    except WebhookRefused as e:
        return HookOutcome(target, False, None, str(e), loop.time() - started)
    try:
        for index, address in enumerate(addresses):
            try:
                response = await _post(client, url, address, payload, bytes_max)
                break
            except httpx.ConnectError:
                if index == len(addresses) - 1:
                    raise
    except httpx.HTTPError as e:
        return HookOutcome(target, False, None, f"{type(e).__name__}: {e}"[:300], loop.time() - started)
    if 200 <= response.status_code < 300:
        return HookOutcome(target, True, response.status_code, None, loop.time() - started)
    status_line = f"answered {response.status_code} {response.reason_phrase}"[:200].strip()
    if response.is_redirect:
        status_line += " (redirects are not followed)"
    return HookOutcome(target, False, response.status_code, status_line, loop.time() - started)


async def _post(
    client: httpx.AsyncClient, url: str, address: str | None, payload: dict[str, Any], bytes_max: int
) -> httpx.Response:
    """POSTs to `address` (the URL's host goes in the Host header and TLS's server name), reads at most
    `bytes_max` bytes of the answer and drops them."""
    request_url = httpx.URL(url)
    headers: dict[str, str] = {}
    extensions: dict[str, Any] = {}
    if address is not None and parse_ip(request_url.host) is None:
        headers["Host"] = request_url.netloc.decode("ascii")
        extensions["sni_hostname"] = request_url.host
        request_url = request_url.copy_with(host=address)
    request = client.build_request("POST", request_url, json=payload, headers=headers, extensions=extensions)
    response = await client.send(request, stream=True)
    try:
        read = 0
        async for chunk in response.aiter_raw():
            read += len(chunk)
            if read >= bytes_max:
                break
    finally:
        await response.aclose()
    return response
