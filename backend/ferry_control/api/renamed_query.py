"""Query parameters once named `server_id` (`…_server_id`) that carried the control plane's id of a registered
server, now `registered_server_id` (`…_registered_server_id`; schemas/registered_ids.py): a request still using an
old name is refused with a 422 naming the new one, rather than answered unfiltered."""

from __future__ import annotations

from fastapi import Request

from ferry_control.core.errors import Unprocessable
from ferry_control.schemas.registered_ids import renamed_field_message


def refuse_old_names(request: Request) -> None:
    """A dependency of the routes whose query parameters were renamed."""
    for key in request.query_params:
        message = renamed_field_message(key)
        if message is not None:
            raise Unprocessable(
                f"query.{key}: {message}",
                details=[{"loc": ["query", key], "message": message, "type": "renamed"}],
            )
