"""ferryctl on an operation that failed: the message names the operation and its error, then says from the typed
failure whether servers were left changed — put back, completed past the point of no return, or unknown — and
lists what was left; the exit code is `failed`, and a refusal by preflight stays `refused`."""

from __future__ import annotations

from typing import Any

import pytest

from ferry_control.ctl.errors import CtlError, ExitCode
from ferry_control.ctl.progress import raise_unless_succeeded


def switchover(state: str, steps: list[str], failure: dict[str, Any] | None, error: str) -> dict[str, Any]:
    return {
        "id": 7, "cluster_id": 1, "type": "switchover", "state": state, "dry_run": False,
        "params": {"candidate_registered_server_id": 2}, "requester": "ops", "idempotency_key": None, "error": error,
        "steps": [{"name": name, "state": "failed", "started_at": "2025-01-01T00:00:00Z"} for name in steps],
        "result": {"failure": failure} if failure is not None else None,
        "created_at": "2025-01-01T00:00:00Z", "started_at": None, "finished_at": None,
    }  # fmt: skip


def refusal(document: dict[str, Any]) -> CtlError:
    with pytest.raises(CtlError) as raised:
        raise_unless_succeeded(document)
    return raised.value


def test_a_failure_past_the_point_of_no_return_says_what_it_left_changed() -> None:
    failure = {
        "kind": "step_failed", "changed": True, "left": ["c replicates from nothing"], "compensation": "rolled_forward",
    }  # fmt: skip
    error = refusal(switchover("failed", ["verify"], failure, "verify failed: c does not replicate from b"))
    assert (error.exit_code, error.code) == (ExitCode.failed, "operation_failed")
    assert error.message.splitlines() == [
        "switchover 7 failed: verify failed: c does not replicate from b",
        "  servers were left changed (past its point of no return: the move was completed instead of undone):",
        "  left changed: c replicates from nothing",
    ]


def test_an_undone_failure_says_nothing_was_left_and_an_unknown_one_says_to_check() -> None:
    undone = {"kind": "server_error", "changed": False, "left": [], "compensation": "undone"}
    error = refusal(switchover("undone", ["promote_candidate"], undone, "b refused SET GLOBAL read_only=0"))
    assert error.message.splitlines()[1:] == ["  nothing was left changed (what it had changed was put back)"]
    unknown = {"kind": "lock_lost", "changed": None, "left": [], "compensation": None}
    error = refusal(switchover("failed", ["promote_candidate"], unknown, "the cluster's operation lock was lost"))
    assert error.message.splitlines()[1:] == ["  whether servers were left changed cannot be told: check the cluster"]


def test_without_a_typed_failure_the_error_alone_and_a_preflight_refusal_stays_refused() -> None:
    error = refusal(switchover("failed", ["promote_candidate"], None, "b did not answer"))
    assert error.message == "switchover 7 failed: b did not answer"
    refused = {"kind": "refused", "changed": False, "left": [], "compensation": None}
    error = refusal(switchover("failed", ["preflight"], refused, "candidate_healthy failed"))
    assert (error.exit_code, error.code) == (ExitCode.refused, "preflight_refused")
