"""The typed failures (`result.failure`) tests expect of an operation, as the API answers them."""

#: Its checks or conditions refused it before it changed anything.
REFUSED = {"kind": "refused", "changed": False, "left": [], "compensation": None}
#: A step's own check failed and its guard put back everything it had changed.
UNDONE = {"kind": "step_failed", "changed": False, "left": [], "compensation": "undone"}
