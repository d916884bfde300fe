"""How ferryd reports its change consumers (docs/node-api.md `GET /v1/consumers`, and `consumers` of `GET /v1/status`):
each consumer with its position and lag per domain, the last ones cut off, and the bound — read into the driver
interface's `ChangeConsumers`. A malformed field raises TypeError / ValueError / KeyError naming it; the driver
turns that into its protocol error."""

from __future__ import annotations

from typing import Any

from ferry_control.drivers.base import ChangeConsumer, ChangeConsumers, CutOffConsumer, DomainLag


def _field(body: dict[str, Any], key: str, kind: type) -> Any:
    value = body[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise TypeError(f"{key} is {value!r:.80}, not {kind.__name__}")
    return value


def _objects(body: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = body.get(key) or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise TypeError(f"{key} is {items!r:.80}, not a list of objects")
    return items


def _lag(domain: str, value: Any) -> tuple[int, DomainLag]:
    if not isinstance(value, dict):
        raise TypeError(f"lag of domain {domain!r:.20} is {value!r:.80}, not an object")
    return int(domain), DomainLag(transactions=int(value["transactions"]), seconds=float(value["seconds"]))


def consumer(c: dict[str, Any]) -> ChangeConsumer:
    lag = c.get("lag") or {}
    if not isinstance(lag, dict):
        raise TypeError(f"lag is {lag!r:.80}, not an object")
    return ChangeConsumer(
        name=_field(c, "name", str),
        address=_field(c, "address", str),
        domains=tuple(int(d) for d in _field(c, "domains", list)),
        start_position=_field(c, "start_position", str),
        position=_field(c, "position", str),
        connected_at_us=_field(c, "connected_at_us", int),
        transactions_sent=_field(c, "transactions_sent", int),
        lag=dict(_lag(d, v) for d, v in lag.items()),
    )


def cut_off(c: dict[str, Any]) -> CutOffConsumer:
    return CutOffConsumer(
        name=_field(c, "name", str),
        address=_field(c, "address", str),
        position=_field(c, "position", str),
        at_us=_field(c, "at_us", int),
        reason=_field(c, "reason", str),
    )


def consumers_in(body: dict[str, Any]) -> tuple[ChangeConsumer, ...]:
    """The `consumers` list of a node's document, each one named by its place when malformed."""
    parsed = []
    for index, c in enumerate(_objects(body, "consumers")):
        try:
            parsed.append(consumer(c))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"consumers[{index}]: {e}") from e
    return tuple(parsed)


def change_consumers(body: Any) -> ChangeConsumers:
    """`GET /v1/consumers`."""
    if not isinstance(body, dict):
        raise TypeError(f"the document is {body!r:.80}, not an object")
    cut = []
    for index, c in enumerate(_objects(body, "cut_off")):
        try:
            cut.append(cut_off(c))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"cut_off[{index}]: {e}") from e
    return ChangeConsumers(
        consumers=consumers_in(body),
        cut_off=tuple(cut),
        cut_off_total=_field(body, "cut_off_total", int),
        consumers_max=_field(body, "consumers_max", int),
    )
