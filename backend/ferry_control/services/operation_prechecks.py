"""Checks a request to start an operation against the live server before it is accepted, where the refusal can be
told at once and precisely (nothing is recorded, nothing changed): skipping transactions needs the named connection
to exist (404 `connection_not_found`) and to be stopped (409 `connection_running`); a parallel apply change needs
the connection (404 `connection_not_found`) and settings its server's kind accepts (422 `parallel_apply_invalid`).
A server that does not answer is left to the operation's own preflight, which checks everything again when it runs
(the state may have changed)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.errors import Conflict, NotFound, Unprocessable
from ferry_control.core.naming import server_label
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.operation import ParallelApplyParams, SkipTransactionsParams
from ferry_control.services.orchestrator.catch_up_parallel import settings_of
from ferry_control.services.orchestrator.parallel_apply import refusal, wanted_settings
from ferry_control.services.orchestrator.skip import find_connection, is_stopped, why_not_stopped


async def precheck_skip_transactions(
    session: AsyncSession, drivers: DriverFactory, settings: Settings, cluster_id: int, params: SkipTransactionsParams
) -> None:
    cluster = await ClusterRepository(session).get(cluster_id)
    server = await ServerRepository(session).get(cluster_id, params.registered_server_id)
    if cluster is None or server is None:
        return  # the operation service answers 404 for those
    try:
        status = await drivers.for_server(server, cluster).status()
    except DriverError:
        return  # not reachable now: the operation's preflight says so (a failed operation, not a 5xx here)
    connections = status.connections
    label = server_label(server.name, status.server_id)  # as it reports itself now (a poll may not have run yet)
    name = params.connection
    if name is None:
        name = connections[0].name if len(connections) == 1 else settings.operations.replication_connection_name
    connection = find_connection(connections, name)
    if connection is None:
        raise NotFound(
            f"{label} has no replication connection {name!r} (it has: "
            f"{', '.join(repr(c.name) for c in connections) or 'none'})",
            code="connection_not_found",
            details={"registered_server_id": server.id, "connection": name},
        )
    if not is_stopped(connection):
        raise Conflict(
            why_not_stopped(label, connection),
            code="connection_running",
            details={"registered_server_id": server.id, "connection": name, "io_state": connection.io_state.value,
                     "sql_state": connection.sql_state.value},
        )  # fmt: skip


async def precheck_parallel_apply(
    session: AsyncSession, drivers: DriverFactory, settings: Settings, cluster_id: int, params: ParallelApplyParams
) -> None:
    cluster = await ClusterRepository(session).get(cluster_id)
    server = await ServerRepository(session).get(cluster_id, params.registered_server_id)
    if cluster is None or server is None:
        return  # the operation service answers 404 for those
    try:
        driver = drivers.for_server(server, cluster)
    except DriverError:
        return  # no address to ask, or not approved: the operation's preflight says so
    if driver.parallel_apply_limits is None:
        raise Unprocessable(
            f"{server.kind.value} servers cannot change their parallel apply", code="parallel_apply_invalid",
            details={"registered_server_id": server.id},
        )  # fmt: skip
    try:
        status = await driver.status()
    except DriverError:
        return  # not reachable now: the operation's preflight says so
    label = server_label(server.name, status.server_id)
    connections = status.connections
    name = params.connection
    if name is None:
        name = connections[0].name if len(connections) == 1 else settings.operations.replication_connection_name
    connection = find_connection(connections, name)
    if connection is None:
        raise NotFound(
            f"{label} has no replication connection {name!r} (it has: "
            f"{', '.join(repr(c.name) for c in connections) or 'none'})",
            code="connection_not_found",
            details={"registered_server_id": server.id, "connection": name},
        )
    wanted = wanted_settings(params, settings_of(connection.settings))
    why = refusal(driver.parallel_apply_limits, server.kind.value, wanted)
    if why is not None:
        raise Unprocessable(
            f"{label}: {why}; nothing was changed", code="parallel_apply_invalid",
            details={"registered_server_id": server.id, "connection": name, **wanted.model_dump()},
        )  # fmt: skip
