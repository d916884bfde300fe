"""A server's change consumers as the API shows them (GET …/servers/{id}/consumers): read from the server now through
its driver — each consumer with its position and lag per domain, the last ones cut off — or, for a kind that does not
tell consumers apart from replicas (MariaDB), why there is no such list. Nothing is stored."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.errors import Conflict
from ferry_control.drivers.base import ChangeConsumer
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.schemas.consumer import ConsumerLagRead, ConsumerRead, CutOffConsumerRead, ServerConsumersRead
from ferry_control.services.servers import ServerService


def _at(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1_000_000, UTC)


def consumer_read(c: ChangeConsumer) -> ConsumerRead:
    return ConsumerRead(
        name=c.name, address=c.address, domains=list(c.domains), start_position=c.start_position,
        position=c.position, connected_at=_at(c.connected_at_us), transactions_sent=c.transactions_sent,
        lag={str(d): ConsumerLagRead(transactions=lag.transactions, seconds=lag.seconds) for d, lag in c.lag.items()},
    )  # fmt: skip


def consumers_words(label: str, consumers: int) -> str:
    if consumers == 0:
        return f"No change consumer streams from {label} now."
    return f"{consumers} change consumer(s) stream from {label}."


async def describe(
    session: AsyncSession, drivers: DriverFactory, cluster_id: int, server_id: int, timeout_s: float
) -> ServerConsumersRead:
    """404 for no such cluster or server; 409 `server_unreachable` when the server does not answer within
    `timeout_s` (or is not contacted: no admin address, not approved)."""
    servers = ServerService(session)
    server = await servers.get(cluster_id, server_id)
    cluster = await servers.clusters.get(cluster_id)
    try:
        async with asyncio.timeout(timeout_s):
            report = await drivers.for_server(server, cluster).change_consumers()
    except (DriverError, TimeoutError) as e:
        why = str(e) or f"no answer within {timeout_s} s"
        raise Conflict(
            f"{server.label}'s change consumers cannot be read now: {why}",
            code="server_unreachable",
            details={"registered_server_id": server.id},
        ) from e
    if report is None:
        words = (
            f"{server.label} does not tell change consumers apart from its replicas: a binlog reader (Debezium, "
            "mysqlbinlog --read-from-remote-server) connects as a replica and is listed among them."
        )
        return ServerConsumersRead(
            registered_server_id=server.id, label=server.label, kind=server.kind.value, supported=False, words=words,
            consumers=[], cut_off=[], cut_off_total=0, consumers_max=None,
        )  # fmt: skip
    return ServerConsumersRead(
        registered_server_id=server.id,
        label=server.label,
        kind=server.kind.value,
        supported=True,
        words=consumers_words(server.label, len(report.consumers)),
        consumers=[consumer_read(c) for c in report.consumers],
        cut_off=[
            CutOffConsumerRead(name=c.name, address=c.address, position=c.position, at=_at(c.at_us), reason=c.reason)
            for c in report.cut_off
        ],
        cut_off_total=report.cut_off_total,
        consumers_max=report.consumers_max,
    )
