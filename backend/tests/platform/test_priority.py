"""The web process's lower CPU priority (`core/priority.py`, `web_nice`): a process that lowers its priority by N
steps runs N steps nicer than its parent (at most 19), and 0 leaves it as it was."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = (
    "import os, sys\n"
    "from ferry_control.core.priority import lower_priority\n"
    "lower_priority(int(sys.argv[1]))\n"
    "print(os.nice(0))"
)


@pytest.mark.parametrize("steps", [0, 3, 10])
def test_a_process_lowering_its_priority_runs_that_many_steps_nicer_than_its_parent(steps: int) -> None:
    parent = os.nice(0)
    result = subprocess.run([sys.executable, "-c", PROBE, str(steps)], capture_output=True, text=True, check=True)
    assert int(result.stdout.strip()) == min(19, parent + steps), result.stderr
