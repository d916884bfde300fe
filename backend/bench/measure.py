"""What the benchmarks share to measure: quantiles of a sample, this process's and another's CPU time, another's
wait for a CPU, and the
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


def process_run_delay_s(pid: int) -> float:
    """Seconds the threads of another process have spent runnable but waiting for a CPU (the scheduler's run queue),
    from /proc/<pid>/task/*/schedstat; threads that ended are not counted."""
    total_ns = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total_ns += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total_ns / 1e9


def machine_cpu_s() -> tuple[float, float]:
    """CPU seconds the whole machine has spent busy (every state but idle and iowait, all CPUs), and of those the
    ones its hypervisor gave to others (steal), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    return (sum(fields[:8]) - fields[3] - fields[4]) / ticks, fields[7] / ticks


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of another process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
