"""How a rebuild marks its recipient: fenced, with a reason starting with `REBUILD_MARK`. A server so marked holds a
copy that may be incomplete: the failover monitor never rejoins it by itself, and a rejoin refuses it."""

from __future__ import annotations

#: The words a rebuild's fence reason starts with.
REBUILD_MARK = "rebuild:"


def is_rebuild_mark(reason: str | None) -> bool:
    return reason is not None and reason.startswith(REBUILD_MARK)
