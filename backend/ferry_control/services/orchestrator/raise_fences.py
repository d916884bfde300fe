"""A new holder of a cluster raises the fence on every server before it repairs any (`raise_fences`): servers that
keep fencing tokens (ferryd) then refuse a change the previous holder sent with its older token — a call an instance
had in flight when it paused lands after the takeover — even on a server the new holder has nothing to change on.
Kinds that keep no token (MariaDB) raise nothing: the limit stays for them (docs/architecture.md)."""

from __future__ import annotations

import asyncio

from ferry_control.drivers.errors import DriverError
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView


async def raise_fences(snapshot: ClusterSnapshot) -> list[str]:
    """Raises the fence on every server of the snapshot that answered; returns, in words, where it could not (a
    server that did not answer: a change the previous holder sent may still land there)."""
    views = [v for v in snapshot.views if v.reachable]

    async def one(view: ServerView) -> str | None:
        assert view.driver is not None
        try:
            await view.driver.raise_fence()
        except DriverError as e:
            return f"the fence could not be raised on {view.info.label}: {e.code}: {e.message}"
        return None

    found = await asyncio.gather(*(one(v) for v in views))
    return [f for f in found if f is not None]
