"""Headers every response carries, so a browser gives the dashboard's origin — which keeps an API token in
`localStorage` — no more than it needs: a Content-Security-Policy that runs only the origin's own scripts (no
third-party or inline script), lets no other page frame it (`frame-ancestors 'none'`, and `X-Frame-Options: DENY`
for older browsers: its confirm buttons cannot be clickjacked), `X-Content-Type-Options: nosniff` (an answer is
never run as a script or style it was not served as) and no Referer sent elsewhere. A response that sets its own
policy (the API documentation's pages, api/api_docs.py) keeps it."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The dashboard's policy: its own scripts only; styles inline too (its components set some); images and fonts of
#: its own or inline data; requests (the API, event streams) to its own origin; never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeadersMiddleware:
    """Adds `HEADERS` to every HTTP response that does not set them itself."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in HEADERS if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
