"""Following an operation to its end: each step printed as it starts and as it finishes (polling the operation,
`poll_s` apart), then the outcome — success, refused by preflight (the failing checks named), or failed. The API's
answer is read as its own model (`ferry_control.schemas.operation.OperationRead`: a union on `type`, each with its
type's result), so results are read by field; the JSON document printed is the API's answer as it came."""

from __future__ import annotations

import time
from typing import Any

from rich.markup import escape

from ferry_control.ctl import catch_up
from ferry_control.ctl.client import Client
from ferry_control.ctl.errors import CtlError, ExitCode
from ferry_control.ctl.output import Output, cell_text
from ferry_control.ctl.rebuild_progress import CopyProgress
from ferry_control.schemas.operation import AnyOperation, OperationRead, OperationStep
from ferry_control.schemas.operation_results import CheckResult, Failure, MovesWriter, RebuildResult

TERMINAL_STATES = {"succeeded", "failed", "undone", "interrupted"}
#: Steps that only check and change nothing: an operation that failed in one was refused.
CHECK_STEPS = {"preflight", "confirm_master_lost", "identify"}
#: A move's wait for its candidate before the window: it fails having changed nothing (the window would not fit).
CATCH_UP_STEPS = {catch_up.STEP}
#: Time between two reads of a running operation, in seconds.
POLL_S = 0.2


class StepPrinter:
    """Prints each step's start and end once, however often the operation is read, and the catch-up before the
    window's progress while it waits."""

    def __init__(self, out: Output):
        self.out = out
        self.printed: dict[int, set[str]] = {}
        self.catch_ups: dict[int, catch_up.Progress] = {}
        #: A rebuild's copy: bytes, rate and ETA while its `copy` step runs.
        self.copy = CopyProgress(out)

    def update(self, operation: AnyOperation) -> None:
        for index, step in enumerate(operation.steps):
            done = self.printed.setdefault(index, set())
            name, state = escape(step.name), step.state
            if "start" not in done:
                done.add("start")
                if state == "running":
                    self.out.line(f"  … {name}")
            catching_up = None
            if step.name in CATCH_UP_STEPS:
                catching_up = self.catch_ups.setdefault(index, catch_up.Progress(self.out))
                if state == "running":
                    catching_up.running(step.detail)
            if step.name == "copy" and state == "running" and isinstance(operation.result, RebuildResult):
                self.copy.update(operation.result.progress)
            if state != "running" and "end" not in done:
                done.add("end")
                took = f" ({step.duration_s:.3f} s)" if step.duration_s is not None else ""
                if state == "passed":
                    self.out.line(f"  [green]✓[/] {name}{took}")
                    if catching_up is not None:
                        catching_up.ended(step.detail)
                elif state == "skipped":
                    self.out.line(f"  – {name} skipped{took}")
                else:
                    detail = step_detail(step)
                    self.out.line(f"  [red]✗[/] {name}{took}" + (f": {escape(detail)}" if detail else ""))


def parse(document: dict[str, Any]) -> AnyOperation:
    """The API's operation document as its type's model."""
    return OperationRead.model_validate(document).root


def step_detail(step: OperationStep) -> str:
    detail = step.detail
    if isinstance(detail, dict) and "checks" in detail:
        failed = [c for c in detail["checks"] if not c.get("passed")]
        return "; ".join(f"{c['name']}: {c.get('detail')}" for c in failed)
    return "" if detail is None else cell_text(detail)


def follow(
    client: Client, out: Output, cluster_id: int, operation_id: int, timeout_s: float | None, poll_s: float = POLL_S
) -> dict[str, Any]:
    """Reads the operation until it ends, printing its steps; returns it as it ended (the API's document)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    printer = StepPrinter(out)
    while True:
        document: dict[str, Any] = client.get(f"/clusters/{cluster_id}/operations/{operation_id}")
        operation = parse(document)
        printer.update(operation)
        if operation.state in TERMINAL_STATES:
            return document
        if deadline is not None and time.monotonic() >= deadline:
            raise CtlError(
                f"operation {operation_id} is still {operation.state} after {timeout_s:g} s "
                f"(follow it: ferryctl operations follow {cluster_id} {operation_id})",
                ExitCode.timeout,
                code="wait_timeout",
                document=document,
            )
        time.sleep(poll_s)


def failed_checks(operation: AnyOperation) -> list[CheckResult]:
    """The named preflight checks that failed (a switchover's, failover's or drill's)."""
    result = operation.result
    checks = result.checks if isinstance(result, MovesWriter) else None
    return [c for c in checks or [] if not c.passed]


def was_refused(operation: AnyOperation) -> bool:
    """It failed in a step that only checks, or in the catch-up before the window: nothing was changed."""
    return refused_in(operation) is not None


def refused_in(operation: AnyOperation) -> str | None:
    """The step that refused the operation (nothing changed), if it was refused."""
    failed = [s for s in operation.steps if s.state == "failed"]
    if operation.state != "failed" or not failed or failed[-1].name not in CHECK_STEPS | CATCH_UP_STEPS:
        return None
    return failed[-1].name


def raise_unless_succeeded(document: dict[str, Any]) -> None:
    """A CtlError (with the API's `document`) for an operation that did not succeed: exit code `refused` when its
    checks refused it (the failing checks named in the message), else `failed`."""
    operation = parse(document)
    if operation.state == "succeeded":
        return
    what = f"{operation.type} {operation.id}"
    error = operation.error or f"{what} ended {operation.state}"
    refused = refused_in(operation)
    if refused in CATCH_UP_STEPS:
        # Its error says it in numbers: both rates, the predicted window, what to do.
        raise CtlError(f"{what} refused: {error}", ExitCode.refused, code="catch_up_refused", document=document)
    if refused is not None:
        checks = failed_checks(operation)
        lines = [f"{what} refused by preflight, nothing was changed" + ("" if checks else f": {error}")]
        lines += [f"  check {c.name} failed: {c.detail}" for c in checks]
        raise CtlError("\n".join(lines), ExitCode.refused, code="preflight_refused", document=document)
    lines = [f"{what} {operation.state}: {error}"]
    failure = operation.result.failure if operation.result is not None else None
    if failure is not None:
        lines.append(f"  {failure_words(failure)}")
        lines += [f"  left changed: {what_left}" for what_left in failure.left]
    raise CtlError("\n".join(lines), ExitCode.failed, code="operation_failed", document=document)


def failure_words(failure: Failure) -> str:
    """Whether an operation that failed left servers changed, from its typed failure (the dashboard says the same)."""
    compensation = {
        "undone": " (what it had changed was put back)",
        "rolled_forward": " (past its point of no return: the move was completed instead of undone)",
    }.get(failure.compensation or "", "")
    if failure.changed is False:
        return f"nothing was left changed{compensation}"
    if failure.changed is True:
        return f"servers were left changed{compensation}:"
    return f"whether servers were left changed cannot be told{compensation}: check the cluster"
