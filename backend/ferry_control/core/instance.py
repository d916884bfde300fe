"""This API instance's identity: the holder name of its leases and the origin of the events it relays."""

from __future__ import annotations

import os
import secrets
import socket

#: Room left in `service_leases.holder` (200) for the pid and the random part.
HOSTNAME_CHARS_MAX = 150


def new_instance_id() -> str:
    """`host-pid-random`: readable in logs and health, and unique even for two apps in one process (tests)."""
    return f"{socket.gethostname()[:HOSTNAME_CHARS_MAX]}-{os.getpid()}-{secrets.token_hex(4)}"
