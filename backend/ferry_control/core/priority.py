"""The web process's share of the CPU below the worker's: with both on one machine and the CPU all taken, the
scheduler serves the worker first — operations, collection and the failover monitor never wait behind a room of
dashboards (without it, a switchover's write-unavailability window stretched with 1,000 streams open).

Measured (backend/bench/dashboards.py, 1,000 streams, docs/benchmarks.md): the median switchover window 33 ms with
both processes at the same priority against 20 ms idle; with the web process five steps lower, within about 5 ms
of idle (+12 % and +22 % over two series of interleaved trials)."""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)


def lower_priority(steps: int) -> None:
    """Makes this process `steps` nicer (from the thread calling it — the event loop's — on; threads started after it
    inherit it). Nothing when `steps` is 0; a refusal is logged, not raised."""
    if steps <= 0:
        return
    try:
        niceness = os.nice(steps)
    except OSError as e:
        log.warning("could not lower this process's CPU priority by %s: %s", steps, e)
        return
    log.info("this process's CPU priority lowered by %s (niceness %s)", steps, niceness)
