"""Checks one server's answer before anything of it is stored: every position and GTID it reports must parse, and
every value must fit where it is stored (the columns' own bounds, read from the models, so the two never drift). A
server that answers nonsense is recorded as erroring, with the reason, and nothing else of its answer is used, so
one bad server never aborts the record of the others."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Column

from ferry_control.core.gtid import GtidPosition, parse_gtid
from ferry_control.drivers.base import ServerStatus
from ferry_control.models import ReplicationLink

#: The largest integer a BIGINT column holds (seq_nos, domain ids, lag in transactions are stored as such).
BIGINT_MAX = 2**63 - 1
#: Bounds on what one answer may hold: more is a server answering nonsense, not a topology.
CONNECTIONS_MAX = 1024
REPLICAS_MAX = 10_000
DOMAINS_MAX = 4096
#: Free text (an error message, a warning) longer than this is refused rather than stored.
TEXT_MAX = 65_536


class InvalidStatus(ValueError):
    """The server answered, but what it said cannot be used; the message names the field and what is wrong."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _position(field: str, text: str | None) -> None:
    _text(field, text)
    try:
        position = GtidPosition.parse(text or "")
    except ValueError as e:
        raise InvalidStatus(f"answered an invalid {field} {_shown(text)}: {e}") from e
    if len(position) > DOMAINS_MAX:
        raise InvalidStatus(f"answered a {field} of {len(position)} domains (at most {DOMAINS_MAX} are read)")
    for gtid in position:
        if gtid.seq > BIGINT_MAX:
            raise InvalidStatus(f"answered a {field} whose seq_no {gtid.seq} is beyond {BIGINT_MAX}")


def _state(field: str, text: str | None) -> None:
    _text(field, text)
    for part in (text or "").split(","):
        if not part.strip():
            continue
        try:
            parse_gtid(part.strip())
        except ValueError as e:
            raise InvalidStatus(f"answered an invalid {field} {_shown(text)}: {e}") from e


def _text(field: str, text: str | None, column: Column[Any] | None = None) -> None:
    """A string that fits: within its column's length where it has one, else within TEXT_MAX."""
    if text is None:
        return
    if not isinstance(text, str):
        raise InvalidStatus(f"answered {field} {_shown(text)}, which is not text")
    length = getattr(column.type, "length", None) if column is not None else None
    bound = length or TEXT_MAX
    if len(text) > bound:
        raise InvalidStatus(f"answered a {field} of {len(text)} characters (at most {bound}): {_shown(text)}")


def _integer(field: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise InvalidStatus(f"answered {field} {_shown(value)}, outside {low}..{high}")


def _column(model: Any, name: str) -> Column[Any]:
    column: Column[Any] = model.__table__.c[name]
    return column


def validate_status(status: ServerStatus) -> None:
    """Raises InvalidStatus when any position, GTID, id or value in `status` is malformed or does not fit where it
    is stored."""
    _integer("server_id", status.server_id, 0, 2**32 - 1)
    _integer("default_domain", status.default_domain, 0, 2**32 - 1)
    positions = status.positions
    _position("gtid_binlog_pos", positions.binlog)
    _position("gtid_slave_pos", positions.slave)
    _position("gtid_current_pos", positions.current)
    _state("gtid_binlog_state", positions.binlog_state)
    _text("failure", status.failure)
    _text("version", status.version)
    _text("listen address", status.listen_address)
    for warning in status.warnings:
        _text("warning", warning)
    if len(status.connections) > CONNECTIONS_MAX:
        raise InvalidStatus(f"answered {len(status.connections)} connections (at most {CONNECTIONS_MAX} are read)")
    if len(status.replicas) > REPLICAS_MAX:
        raise InvalidStatus(f"answered {len(status.replicas)} replicas (at most {REPLICAS_MAX} are read)")
    for connection in status.connections:
        _text("connection name", connection.name, _column(ReplicationLink, "name"))
        where = f"connection {connection.name!r}"
        _text(f"master address of {where}", connection.master_address, _column(ReplicationLink, "master_address"))
        _position(f"received position of {where}", connection.received_position)
        _position(f"applied position of {where}", connection.applied_position)
        _position(f"master position of {where}", connection.master_position)
        if connection.until is not None:
            _position(f"UNTIL position of {where}", connection.until)
        _integer(f"delay of {where}", connection.delay_s, 0, 2**31 - 1)
        _integer(f"skip counter of {where}", connection.skip_counter, 0, 2**31 - 1)
        if len(connection.lag) > DOMAINS_MAX:
            raise InvalidStatus(f"answered lag for {len(connection.lag)} domains of {where}")
        for domain, lag in connection.lag.items():
            _integer(f"a lag domain of {where}", domain, 0, 2**32 - 1)
            _integer(f"lag in transactions of {where}, domain {domain}", lag.transactions, 0, BIGINT_MAX)
            if not math.isfinite(lag.seconds) or lag.seconds < 0:
                raise InvalidStatus(f"answered lag in seconds {lag.seconds!r} for {where}, domain {domain}")
        if connection.last_error is not None:
            error = connection.last_error
            if error.side not in ("io", "sql"):
                raise InvalidStatus(f"answered an error side {_shown(error.side)} for {where} (io or sql)")
            _text(f"error code of {where}", error.code, _column(ReplicationLink, "last_error_code"))
            _text(f"error message of {where}", error.message)
    for replica in status.replicas:
        _integer("a replica's server_id", replica.server_id, 0, 2**32 - 1)
        _text(f"address of replica {replica.server_id}", replica.address)
        _position(f"sent position of replica {replica.server_id}", replica.sent_position)
