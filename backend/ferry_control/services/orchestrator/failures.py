"""How an operation fails: `OperationFailed` (a message for people, and typed: its kind, whether it left servers
changed, what it left), what the guard's compensation did (`UndoOutcome`), and the typed failure recorded on the
result (`result.failure`) from the error that ended it, why it was stopped from outside, and that compensation — or,
for an operation whose API instance stopped, from what the reconcile's repair did (`RepairVerdict`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.fencing import StaleFence
from ferry_control.schemas.operation_results import Failure, FailureKind


class OperationFailed(Exception):
    """Ends an operation as failed (or undone, when what it changed was put back), with a message for people and
    typed: its `kind`, whether it left servers `changed` (None: it cannot tell; the guard's compensation, when one
    ran, says instead) and what it `left` changed."""

    def __init__(
        self,
        message: str,
        *,
        undone: bool = False,
        kind: FailureKind = "step_failed",
        changed: bool | None = None,
        left: Sequence[str] = (),
    ):
        super().__init__(message)
        self.message = message
        self.undone = undone
        self.kind: FailureKind = kind
        self.changed = changed
        self.left = list(left)


class LeaseLost(OperationFailed):
    """The operation no longer holds its cluster's lock (taken over, or its lease lapsed): it must not go on."""

    def __init__(self, message: str, kind: FailureKind = "lock_lost"):
        super().__init__(message, kind=kind)


def refused(message: str) -> OperationFailed:
    """A refusal before anything was changed (its checks or conditions said no)."""
    return OperationFailed(message, kind="refused", changed=False)


@dataclass(frozen=True)
class UndoOutcome:
    """What the guard did when the operation ended without success."""

    #: Why the operation stopped.
    reason: str
    #: What the compensation did or could not do.
    summary: str
    #: Whether everything was put back (or completed).
    complete: bool
    #: `undone` (put back as before) or `rolled forward` (completed past the point of no return).
    kind: str

    @property
    def message(self) -> str:
        verb = self.kind if self.complete else {"undone": "undo", "rolled forward": "roll forward"}[self.kind]
        return f"{self.reason}; {verb if self.complete else verb + ' incomplete'}: {self.summary}"


def failure_of(error: BaseException, stopped: FailureKind | None, outcome: UndoOutcome | None) -> Failure:
    """The failure of an operation that ended with `error` — `stopped` from outside for that reason, when it was —
    after its guard's compensation did `outcome` (None: nothing was registered to compensate)."""
    kind: FailureKind
    if isinstance(error, asyncio.CancelledError):
        kind = stopped or "shutdown"
    elif isinstance(error, OperationFailed):
        kind = error.kind
    elif isinstance(error, StaleFence):
        kind = "lock_lost"  # a server has seen a newer fencing token of the cluster: another holder took it
    elif isinstance(error, DriverError):
        kind = "server_error"
    else:
        kind = "internal"
    if outcome is not None:
        if outcome.kind == "undone":
            # Put back as before: nothing left changed.
            if outcome.complete:
                return Failure(kind=kind, changed=False, compensation="undone")
            return Failure(kind=kind, changed=True, left=[outcome.summary], compensation="undone")
        # Completed past the point of no return: the move stands as planned.
        left = [] if outcome.complete else [outcome.summary]
        return Failure(kind=kind, changed=True, left=left, compensation="rolled_forward")
    if isinstance(error, OperationFailed):
        return Failure(kind=kind, changed=error.changed, left=error.left)
    return Failure(kind=kind, changed=None)


#: What a reconcile's repair did to the servers of an operation whose API instance stopped: put back as they were
#: (`undone`), the move completed (`rolled_forward`), found them unchanged (`unchanged`: it stopped before changing
#: any), or could not tell or settle them (`unknown`: a server unreachable, an operation of one move examined only).
RepairVerdict = Literal["undone", "rolled_forward", "unchanged", "unknown"]


def interrupted_failure(verdict: RepairVerdict, problems: Sequence[str]) -> Failure:
    """The failure of an operation whose API instance stopped, once a reconcile's repair did `verdict`; `problems`
    are what it could not do (left as they are)."""
    left = list(problems)
    if verdict == "unchanged":
        return Failure(kind="interrupted", changed=bool(left), left=left)
    if verdict == "undone":
        return Failure(kind="interrupted", changed=bool(left), left=left, compensation="undone")
    if verdict == "rolled_forward":
        return Failure(kind="interrupted", changed=True, left=left, compensation="rolled_forward")
    return Failure(kind="interrupted", changed=None, left=left)
