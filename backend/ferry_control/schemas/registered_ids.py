"""The names of the control plane's server ids in the API. A field that carries the id of a registered server (the
one in API paths) is `registered_server_id` (`candidate_registered_server_id`, …); `server_id` in the API is only
ever the server's own (MariaDB's @@server_id, the number in its GTIDs). Those fields were once named `server_id`
(`candidate_server_id`, …): a request body still using an old name is refused naming the new one
(`renamed_field_message`, api/errors.py), and rows stored under the old names are read under the new ones
(`read_old_names`)."""

from __future__ import annotations

from typing import Any

_OLD = "server_id"
_NEW = "registered_server_id"
#: Names that carry a server's own server_id, never the control plane's.
_OWN = frozenset({"reported_server_id", "origin_server_id"})


def new_name(old: str) -> str | None:
    """The field's name now, for a field once named `server_id` or `…_server_id` that carried the control plane's
    id; None for any other name."""
    if old in _OWN or not old.endswith(_OLD) or old.endswith(_NEW) or (old != _OLD and not old.endswith("_" + _OLD)):
        return None
    return old[: -len(_OLD)] + _NEW


def renamed_field_message(old: str) -> str | None:
    """What a request body with the old name is told (None: not an old name)."""
    new = new_name(old)
    if new is None:
        return None
    return (
        f"{old} was renamed {new}: it carries the control plane's id of a registered server (the id in API paths), "
        "while server_id in the API is the server's own (MariaDB's @@server_id); send "
        f"{new}"
    )


def read_old_names(fields: dict[str, Any], value: Any) -> Any:
    """A stored row's keys under the names of `fields`: each old name the model no longer has, whose new name it has
    and the row lacks, read as the new name."""
    if not isinstance(value, dict):
        return value
    renamed = {}
    for key in value:
        new = new_name(key) if isinstance(key, str) and key not in fields else None
        if new is not None and new in fields and new not in value:
            renamed[key] = new
    if not renamed:
        return value
    return {renamed.get(key, key): item for key, item in value.items()}


def stored_id(row: dict[str, Any], name: str) -> Any:
    """A stored row's value of the field `name` (`…registered_server_id`), or of its old name in a row written
    before."""
    if name in row:
        return row[name]
    return row.get(name.removesuffix("registered_server_id") + "server_id")
