"""An operation's typed failure (`result.failure`) from what ended it: the error's kind, whether servers were left
changed, what was left, and what the guard's compensation did (services/orchestrator/failures.py)."""

from __future__ import annotations

import asyncio

from ferry_control.drivers.errors import DriverError
from ferry_control.schemas.operation_results import Failure
from ferry_control.services.orchestrator.failures import (
    LeaseLost,
    OperationFailed,
    UndoOutcome,
    failure_of,
    refused,
)


def test_a_refusal_changed_nothing() -> None:
    assert failure_of(refused("preflight failed, nothing was changed: x"), None, None) == Failure(
        kind="refused", changed=False
    )


def test_a_step_that_says_what_it_left() -> None:
    error = OperationFailed("b is the master, but not every server follows it: c: stopped", changed=True, left=["c"])
    assert failure_of(error, None, None) == Failure(kind="step_failed", changed=True, left=["c"])


def test_what_cannot_tell_says_so() -> None:
    assert failure_of(OperationFailed("x"), None, None) == Failure(kind="step_failed", changed=None)
    assert failure_of(DriverError("h:1", "E", "no"), None, None) == Failure(kind="server_error", changed=None)
    assert failure_of(RuntimeError("bug"), None, None) == Failure(kind="internal", changed=None)
    assert failure_of(LeaseLost("lost the lock"), None, None).kind == "lock_lost"


def test_a_stop_from_outside_is_named_by_its_reason() -> None:
    assert failure_of(asyncio.CancelledError(), "timed_out", None).kind == "timed_out"
    assert failure_of(asyncio.CancelledError(), None, None).kind == "shutdown"
    assert failure_of(LeaseLost("timed out", "timed_out"), "timed_out", None).kind == "timed_out"


def test_the_compensation_decides_what_was_left() -> None:
    error = OperationFailed("did not reach P")
    undone = UndoOutcome("did not reach P", "a writable again", True, "undone")
    assert failure_of(error, None, undone) == Failure(kind="step_failed", changed=False, compensation="undone")
    half = UndoOutcome("did not reach P", "a: refused", False, "undone")
    assert failure_of(error, None, half) == Failure(
        kind="step_failed", changed=True, left=["a: refused"], compensation="undone"
    )
    forward = UndoOutcome("x", "b is the master", True, "rolled forward")
    assert failure_of(error, None, forward) == Failure(kind="step_failed", changed=True, compensation="rolled_forward")
