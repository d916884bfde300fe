"""A replica's parallel apply as the API shows it (GET …/servers/{id}/parallel-apply): per replication connection,
its mode and workers as the server reports them, what the server's kind accepts, and — measured now, from two
readings of the replica's and its master's positions `interval_s` apart (services/apply_rates.py) — the master's
commit rate and the replica's apply rate per domain with the verdict ("keeps up", "falls behind by N txn/s").
The change itself is an operation (`parallel_apply`, services/orchestrator/parallel_apply.py)."""

from __future__ import annotations

import asyncio
from dataclasses import asdict

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.errors import Conflict
from ferry_control.drivers.base import ReplicaConnection
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.parallel_apply import (
    ConnectionApplyRead,
    DomainRatesRead,
    ParallelApplyLimitsRead,
    ParallelApplyRead,
)
from ferry_control.services.apply_rates import DomainRates, measure_live, overall
from ferry_control.services.orchestrator.catch_up_parallel import settings_of
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, ServerView
from ferry_control.services.servers import ServerService


async def describe(
    session: AsyncSession, drivers: DriverFactory, settings: Settings, cluster_id: int, server_id: int,
    interval_s: float,
) -> ParallelApplyRead:  # fmt: skip
    """The server's connections with their parallel apply and rates measured over `interval_s`. 404 for no such
    cluster or server; 409 `server_unreachable` when the server does not answer now."""
    servers = ServerService(session)
    server = await servers.get(cluster_id, server_id)
    cluster = await servers.clusters.get(cluster_id)
    registered = list(await ServerRepository(session).list_for_cluster(cluster_id))
    snapshot = await ClusterSnapshot.take(cluster, registered, drivers, settings.collection.poll_timeout_s)
    view = snapshot.view(server.id)
    if view.status is None:
        raise Conflict(f"{view.info.label} cannot be reached now: {view.error}", code="server_unreachable",
                       details={"registered_server_id": server.id})  # fmt: skip
    driver = view.require_driver()
    limits = driver.parallel_apply_limits
    connections = await asyncio.gather(*(_connection(snapshot, view, c, interval_s) for c in view.status.connections))
    return ParallelApplyRead(
        registered_server_id=server.id, label=view.info.label, kind=view.info.kind.value,
        limits=None if limits is None else ParallelApplyLimitsRead.model_validate(asdict(limits)),
        measured_over_s=interval_s, connections=list(connections),
    )  # fmt: skip


async def _connection(
    snapshot: ClusterSnapshot, view: ServerView, connection: ReplicaConnection, interval_s: float
) -> ConnectionApplyRead:
    master = snapshot.master_of(connection)
    domains: list[DomainRates] = []
    if master is not None and master.reachable:
        try:
            domains = await measure_live(master.require_driver(), view.require_driver(), interval_s)
        except DriverError:
            domains = []
    verdict, words = overall(domains)
    if master is None:
        words = f"not measured: {connection.master_address} is not a registered server of the cluster"
    elif not master.reachable:
        words = f"not measured: its master {master.info.label} cannot be reached ({master.error})"
    return ConnectionApplyRead(
        name=connection.name, master_address=connection.master_address,
        master_registered_server_id=None if master is None else master.info.id, running=connection.running,
        sql_state=connection.sql_state.value, settings=settings_of(connection.settings),
        domains=[DomainRatesRead.model_validate(asdict(d)) for d in domains], verdict=verdict, words=words,
    )  # fmt: skip
