"""A rebuild's copy as the operation runs it: the driver's `rebuild_from` with a `CopyThrottle` the operation holds —
paused while the donor's replication lag is over the cluster's threshold (and `paused_reason` says so), going on once
it is back under — and the driver's progress put into the result (`RebuildProgress`, with its ETA) and published
through the runner at most about once a second."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from ferry_control.drivers.base import CopyProgress, CopyThrottle, RebuildSource, ServerDriver
from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation_results import RebuildProgress, RebuildResult
from ferry_control.services.orchestrator.runner import OperationContext

#: Between two looks at the donor's lag.
LAG_EVERY_S = 1.0
#: Between two publications of the progress.
PUBLISH_EVERY_S = 1.0


def as_progress(p: CopyProgress, paused_reason: str | None) -> RebuildProgress:
    left = None if p.bytes_total is None else max(p.bytes_total - p.bytes_done, 0)
    eta = None if left is None or p.paused or p.rate_bytes_s <= 0 else round(left / p.rate_bytes_s, 1)
    if p.phase == "done":
        eta = 0.0
    return RebuildProgress(
        phase=p.phase, bytes_done=p.bytes_done, bytes_total=p.bytes_total, rate_bytes_s=round(p.rate_bytes_s, 1),
        eta_s=eta, paused=p.paused, paused_reason=paused_reason if p.paused else None,
    )  # fmt: skip


async def donor_lag_s(donor: ServerDriver) -> float:
    """The donor's replication lag now: the most of its connections' per-domain lag, in seconds."""
    connections = await donor.replica_connections()
    return max((lag.seconds for c in connections for lag in c.lag.values()), default=0.0)


async def copy(
    ctx: OperationContext[Any, Any], result: RebuildResult, recipient: ServerDriver, source: RebuildSource, *,
    throttle_mb_s: float | None, lag_pause_s: float, donor_label: str, resume: bool,
) -> CopyProgress:  # fmt: skip
    """The copy, its progress into `result` (the operation's, or a rejoin's `rebuild`), published by `ctx`."""
    throttle = CopyThrottle(mb_s=throttle_mb_s)
    reason: list[str | None] = [None]
    published = [0.0]

    def on_progress(p: CopyProgress) -> None:
        phase_changed = result.progress is None or result.progress.phase != p.phase
        result.progress = as_progress(p, reason[0])
        now = time.monotonic()
        if phase_changed or now - published[0] >= PUBLISH_EVERY_S:
            published[0] = now
            ctx.changed()

    async def watch_donor() -> None:
        while True:
            try:
                lag = await donor_lag_s(source.driver)
            except DriverError:
                lag = None
            if lag is not None and lag > lag_pause_s:
                reason[0] = (
                    f"the donor {donor_label} trails its source by {lag:.0f} s (over the cluster's {lag_pause_s:g} s): "
                    "the copy waits until it is back under"
                )
                throttle.paused = True
            else:
                reason[0], throttle.paused = None, False
            await asyncio.sleep(LAG_EVERY_S)

    watcher = asyncio.create_task(watch_donor())
    try:
        return await recipient.rebuild_from(source, throttle=throttle, on_progress=on_progress, resume=resume)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
