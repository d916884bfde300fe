"""The fencing token a driver sends with its changes: who the control plane acts for right now.

The runner sets `ACTING_FOR` around an operation's work and the reconcile around its repair (`acting_for`); a driver
whose servers keep fencing tokens (the ferry kind: `X-Ferry-Fence`, docs/node-api.md) sends `current()` with every
state-changing request, and a server's refusal of a stale token is `StaleFence` — after `Acting.refused` told the
holder, which stops its work as a lost lock does. The token is read when each request is sent (`token` is a
callable): an operation that took its cluster's lock again (the runner's heartbeat) sends its new token from then
on. Scopes are per cluster (`scope_of`), so two clusters' tokens never compare. Outside an operation (the
collector's reads, an operator's API call) nothing is set and nothing is sent."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ferry_control.drivers.errors import ErrorKind, ServerConflict

#: The error code a server answers a stale token with.
STALE_FENCE = "stale_fence"


@dataclass(frozen=True)
class Acting:
    """On whose behalf changes are sent: the cluster's scope, its lock's token now, and what to do when a server
    refuses the token as stale."""

    scope: str
    token: Callable[[], int | None]
    refused: Callable[[str], None] = lambda _why: None

    def header(self) -> str | None:
        """`<scope>:<token>`, or None when there is no token (a dry run)."""
        token = self.token()
        return None if token is None else f"{self.scope}:{token}"


ACTING_FOR: ContextVar[Acting | None] = ContextVar("ferry_acting_for", default=None)


def scope_of(cluster_id: int) -> str:
    """A cluster's fencing scope."""
    return f"ferry/cluster/{cluster_id}"


@contextmanager
def acting_for(acting: Acting) -> Iterator[None]:
    """Within: the drivers send `acting`'s token (tasks created inside inherit it)."""
    reset = ACTING_FOR.set(acting)
    try:
        yield
    finally:
        ACTING_FOR.reset(reset)


def current() -> Acting | None:
    return ACTING_FOR.get()


class StaleFence(ServerConflict):
    """The server has seen a newer fencing token of this cluster: the operation (or reconcile) the change was sent
    for no longer holds it, and must not go on."""

    default_kind = ErrorKind.conflict


def stale(address: str, message: str) -> StaleFence:
    """The refusal of a stale token — the holder told first (`Acting.refused`)."""
    acting = current()
    if acting is not None:
        acting.refused(f"server {address} refused a change: {message}")
    return StaleFence(address, STALE_FENCE, message)
