"""Checks one server's answer before anything of it is stored: every position and GTID it reports must parse. A
server that answers nonsense is recorded as erroring, with the reason, and nothing else of its answer is used, so
one bad server never aborts the record of the others."""

from __future__ import annotations

import ferry_engine

from ferry_control.drivers.base import ServerStatus


class InvalidStatus(ValueError):
    """The server answered, but what it said cannot be used; the message names the field and what is wrong."""


def _position(field: str, text: str | None) -> None:
    try:
        ferry_engine.GtidPosition.parse(text or "")
    except ValueError as e:
        raise InvalidStatus(f"answered an invalid {field} {text!r}: {e}") from e


def _state(field: str, text: str | None) -> None:
    for part in (text or "").split(","):
        if not part.strip():
            continue
        try:
            ferry_engine.parse_gtid(part.strip())
        except ValueError as e:
            raise InvalidStatus(f"answered an invalid {field} {text!r}: {e}") from e


def validate_status(status: ServerStatus) -> None:
    """Raises InvalidStatus when any position, GTID or id in `status` is malformed."""
    if status.server_id < 0:
        raise InvalidStatus(f"answered a negative server_id {status.server_id}")
    positions = status.positions
    _position("gtid_binlog_pos", positions.binlog)
    _position("gtid_slave_pos", positions.slave)
    _position("gtid_current_pos", positions.current)
    _state("gtid_binlog_state", positions.binlog_state)
    for connection in status.connections:
        where = f"connection {connection.name!r}"
        _position(f"received position of {where}", connection.received_position)
        _position(f"applied position of {where}", connection.applied_position)
        _position(f"master position of {where}", connection.master_position)
        if connection.until is not None:
            _position(f"UNTIL position of {where}", connection.until)
    for replica in status.replicas:
        _position(f"sent position of replica {replica.server_id}", replica.sent_position)
