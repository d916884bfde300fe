"""What the benchmarks share to measure: quantiles of a sample, this process's CPU time, and the switchover steps
that make up the write-unavailability window."""

from __future__ import annotations

import resource

#: The steps inside the unavailability window.
WINDOW_STEPS = ("old_master_read_only", "wait_in_flight_commits", "candidate_catch_up", "promote_candidate")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_s() -> float:
    """User plus system CPU seconds this process has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
