"""Exit codes and `CtlError`, the one exception every failure becomes before it reaches the user."""

from __future__ import annotations

import enum
from typing import Any


class ExitCode(enum.IntEnum):
    ok = 0
    #: The API refused the request for another reason (409 conflict, 5xx), or the answer was not understood.
    error = 1
    #: Wrong flags or arguments, locally or as the API judged them (400, 422).
    usage = 2
    #: The operation was refused with nothing changed: its preflight checks failed, or a master move's catch-up
    #: before the window found that its window would not fit the budget.
    refused = 3
    #: The operation started changing things and failed (it may have been undone).
    failed = 4
    #: The token is missing, unknown, revoked or expired (401), or its role does not allow this (403).
    auth = 5
    #: The cluster, server, operation, run or token does not exist (404).
    not_found = 6
    #: The API could not be reached (connection refused, DNS, TLS, timeout).
    unreachable = 7
    #: `--wait`: the operation was still running when `--timeout` ran out.
    timeout = 8


#: Shown by `ferryctl --help` and documented in docs/operator-guide.md.
EXIT_CODES_HELP = """\b
Exit codes:
  0  ok
  1  the API refused for another reason (conflict, server error)
  2  bad usage: wrong flags or arguments (also the API's 400 and 422)
  3  refused by preflight, or by a switchover's catch-up before the window (its
     window would not fit the budget, --max-window): nothing was changed
  4  the operation failed (it may have been undone)
  5  auth: token missing, unknown, revoked or expired (401), or its role is not enough (403)
  6  not found (404): cluster, server, operation, run or token
  7  the API is unreachable
  8  --wait: the operation was still running when --timeout ran out"""

_BY_STATUS = {400: ExitCode.usage, 401: ExitCode.auth, 403: ExitCode.auth, 404: ExitCode.not_found, 422: ExitCode.usage}


def exit_code_for_status(status: int) -> ExitCode:
    return _BY_STATUS.get(status, ExitCode.error)


class CtlError(Exception):
    """A failure to report: its message (the API's own when the API answered), a code and an exit code. `document`
    is what `--output json` prints for it (an operation that failed, say), else the error itself."""

    def __init__(
        self, message: str, exit_code: ExitCode, *, code: str | None = None, status: int | None = None,
        document: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code or exit_code.name
        self.status = status
        self.document = document

    def as_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "exit_code": int(self.exit_code)}
        if self.status is not None:
            error["status"] = self.status
        return {"error": error}
