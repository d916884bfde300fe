"""How ferryctl tells a rebuild's copy while `--wait` follows it: bytes copied of the estimate, the rate, the ETA, and
why it is paused when it is — from the operation's `result.progress`, at most once a second, each line cut to the
terminal's width."""

from __future__ import annotations

import time

from ferry_control.ctl.catch_up import fit
from ferry_control.ctl.output import Output
from ferry_control.schemas.operation_results import RebuildProgress

#: Between two progress prints.
PRINT_EVERY_S = 1.0


def size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def words(p: RebuildProgress) -> str:
    """One line: `copying: 12.3 MB of 57.1 MB (22%) at 8.0 MB/s, ETA 6 s`, or paused and why."""
    done = size(p.bytes_done)
    if p.bytes_total:
        done += f" of {size(p.bytes_total)} ({min(100, p.bytes_done * 100 // max(p.bytes_total, 1))}%)"
    line = f"{p.phase}: {done} at {size(p.rate_bytes_s)}/s"
    if p.paused:
        return f"{line}, paused: {p.paused_reason or 'the donor trails its source'}"
    if p.eta_s is not None:
        line += f", ETA {p.eta_s:.0f} s"
    return line


class CopyProgress:
    def __init__(self, out: Output):
        self.out = out
        self.printed_at: float | None = None
        self.last: str | None = None

    def update(self, progress: RebuildProgress | None) -> None:
        if progress is None or progress.phase in ("preflight", "replicating"):
            return
        now = time.monotonic()
        line = words(progress)
        if line == self.last or (self.printed_at is not None and now - self.printed_at < PRINT_EVERY_S):
            return
        self.printed_at, self.last = now, line
        self.out.line("    " + fit(self.out, line))
