"""What the benchmarks share to measure: quantiles of a sample, this process's and another's CPU time, and the
switchover steps that make up the write-unavailability window."""

from __future__ import annotations

import os
import resource
from pathlib import Path

#: The steps inside the unavailability window.
WINDOW_STEPS = ("old_master_read_only", "wait_in_flight_commits", "candidate_catch_up", "promote_candidate")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_s() -> float:
    """User plus system CPU seconds this process has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of another process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
