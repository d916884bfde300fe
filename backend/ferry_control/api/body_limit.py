"""Caps request bodies before anything parses them: a declared Content-Length over `request_body_bytes_max` is
answered 413 `body_too_large` at once; a body sent without one is counted as it arrives and refused the same way
once past the cap (such a body is read here, at most the cap, and handed on), before the handler sees it. No request
of the API needs more than a few kilobytes."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ferry_control.core.errors import error_body


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(send, f"the request body declares {declared.decode(errors='replace')[:20]} bytes")
            return
        if declared is not None:
            await self.app(scope, receive, send)  # within the cap, as declared (the server holds it to that)
            return
        # No length declared: read the body here, at most the cap (then refused), and hand it on.
        messages: list[Message] = []
        received = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            received += len(message.get("body", b""))
            if received > self.limit:
                await self._refuse(send, f"the request body passed {self.limit} bytes")
                return
            if not message.get("more_body", False):
                break
        replay = iter(messages)

        async def replayed() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)

    async def _refuse(self, send: Send, what: str) -> None:
        body = json.dumps(error_body(
            "body_too_large", f"{what}: at most {self.limit} bytes are read (request_body_bytes_max)"
        )).encode()  # fmt: skip
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
