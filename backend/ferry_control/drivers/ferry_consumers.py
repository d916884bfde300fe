"""How ferryd reports its change consumers (docs/node-api.md `GET /v1/consumers`, and `consumers` of `GET /v1/status`):
each consumer with its position and lag per domain, the last ones cut off, and the bound — read (as the models of
`ferry_admin` validated them) into the driver interface's `ChangeConsumers`. A malformed lag raises ValueError naming
the consumer's place; the driver turns that into its protocol error."""

from __future__ import annotations

from ferry_control.drivers import ferry_admin as admin
from ferry_control.drivers.base import ChangeConsumer, ChangeConsumers, CutOffConsumer


def consumer(c: admin.Consumer) -> ChangeConsumer:
    return ChangeConsumer(
        name=c.name,
        address=c.address,
        domains=tuple(c.domains),
        start_position=c.start_position,
        position=c.position,
        connected_at_us=c.connected_at_us,
        transactions_sent=c.transactions_sent,
        lag=admin.domain_lags(c.lag),
    )


def cut_off(c: admin.CutOff) -> CutOffConsumer:
    return CutOffConsumer(name=c.name, address=c.address, position=c.position, at_us=c.at_us, reason=c.reason)


def consumers_in(body: admin.Status | admin.Consumers) -> tuple[ChangeConsumer, ...]:
    """The `consumers` list of a node's document, each one named by its place when malformed."""
    return admin.each(body.consumers, "consumers", consumer)


def change_consumers(body: admin.Consumers) -> ChangeConsumers:
    """`GET /v1/consumers`."""
    return ChangeConsumers(
        consumers=consumers_in(body),
        cut_off=tuple(cut_off(c) for c in body.cut_off or ()),
        cut_off_total=body.cut_off_total,
        consumers_max=body.consumers_max,
    )
