"""Bootstrap: fresh ferryd nodes become a replicated cluster registered in the control plane (`cli bootstrap`).

Three steps, each safe to repeat:
1. wait until every node's admin API answers `GET /v1/status` (a bound on the whole wait);
2. when no node has any replication connection yet, make nodes 2..N read-only and point them at node 1 over the
   connection `main` (`slave_pos`); once any node has a connection the topology is kept as it is (a switchover
   may have changed it since), except that a node that replicates and is writable is made read-only again;
3. when no cluster of that name exists yet, register it and its servers (ClusterService, ServerService) in one
   transaction; an existing cluster is left as it is.
Node calls go through the ferry driver with the settings' node admin token (FERRY_NODE_TOKEN(_FILE)).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from ferry_control.core.config import Settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.drivers.base import ChangeMaster, ServerDriver, ServerStatus
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import ServerKind
from ferry_control.schemas.cluster import ClusterCreate
from ferry_control.schemas.server import ServerCreate
from ferry_control.services.approval import COMMAND_LINE
from ferry_control.services.clusters import ClusterService
from ferry_control.services.servers import ServerService

#: Time between two `GET /v1/status` attempts on a node that does not answer yet.
STATUS_RETRY_INTERVAL_S = 0.5


class BootstrapError(Exception):
    """Bootstrap cannot go on; the message says which node or input and why."""


@dataclass(frozen=True)
class NodeSpec:
    """One `--node NAME=HOST:PORT,http://HOST:ADMIN_PORT`: the server's name, protocol and admin addresses."""

    name: str
    host: str
    protocol_port: int
    admin_port: int

    @property
    def protocol_address(self) -> str:
        return f"{self.host}:{self.protocol_port}"

    @property
    def admin_address(self) -> str:
        return f"{self.host}:{self.admin_port}"

    @property
    def admin_url(self) -> str:
        return f"http://{self.admin_address}"


def parse_node(text: str) -> NodeSpec:
    """`node1=127.0.0.1:7301,http://127.0.0.1:7401`. The admin URL must name the protocol address's host: the
    control plane reaches a server's admin API on the host it registers for it."""
    name, sep, addresses = text.partition("=")
    protocol, comma, admin_url = addresses.partition(",")
    if not sep or not comma or not name:
        raise BootstrapError(f"--node {text!r}: expected NAME=HOST:PORT,http://HOST:ADMIN_PORT")
    host, colon, port = protocol.rpartition(":")
    if not colon or not host:
        raise BootstrapError(f"--node {text!r}: the protocol address {protocol!r} is not HOST:PORT")
    admin = urlsplit(admin_url)
    try:
        protocol_port, admin_port = int(port), admin.port
    except ValueError as e:
        raise BootstrapError(f"--node {text!r}: {e}") from e
    if admin.scheme != "http" or admin.hostname is None or admin_port is None or admin.path not in ("", "/"):
        raise BootstrapError(f"--node {text!r}: the admin URL {admin_url!r} is not http://HOST:PORT")
    if admin.hostname != host.strip("[]"):
        raise BootstrapError(
            f"--node {text!r}: the admin URL's host {admin.hostname!r} differs from the protocol host {host!r}; "
            "the control plane reaches a server's admin API on its protocol host"
        )
    for port_number in (protocol_port, admin_port):
        if not 1 <= port_number <= 65535:
            raise BootstrapError(f"--node {text!r}: port {port_number} is out of range")
    return NodeSpec(name=name, host=host, protocol_port=protocol_port, admin_port=admin_port)


async def wait_for_nodes(
    drivers: Sequence[ServerDriver], nodes: Sequence[NodeSpec], wait_s: float
) -> list[ServerStatus]:
    """Every node's status, once each answers; BootstrapError naming each node that did not within `wait_s`."""
    deadline = time.monotonic() + wait_s

    async def one(driver: ServerDriver) -> ServerStatus | DriverError:
        while True:
            try:
                return await driver.status()
            except DriverError as e:
                if time.monotonic() + STATUS_RETRY_INTERVAL_S > deadline:
                    return e
            await asyncio.sleep(STATUS_RETRY_INTERVAL_S)

    answers = await asyncio.gather(*(one(d) for d in drivers))
    silent = [
        f"{node.name} ({node.admin_url}) did not answer GET /v1/status within {wait_s:g} s: {answer.code}: "
        f"{answer.message}"
        for node, answer in zip(nodes, answers, strict=True)
        if isinstance(answer, DriverError)
    ]
    if silent:
        raise BootstrapError("; ".join(silent))
    return [a for a in answers if isinstance(a, ServerStatus)]


async def wire_replication(
    drivers: Sequence[ServerDriver], nodes: Sequence[NodeSpec], statuses: Sequence[ServerStatus], connection: str
) -> str:
    """Nodes 2..N read-only and replicating from node 1, unless any node has a replication connection already."""
    wired = [f"{n.name} ({len(s.connections)})" for n, s in zip(nodes, statuses, strict=True) if s.connections]
    if wired:
        # Kept as it is — but a node that replicates never takes a client's write: one found writable (made so by
        # hand, or a data directory from before read-only was recorded) is made read-only again.
        made: list[str] = []
        for node, driver, status in zip(nodes, drivers, statuses, strict=True):
            if status.connections and not status.read_only:
                try:
                    await driver.set_read_only(True)
                except DriverError as e:
                    raise BootstrapError(
                        f"making the replica {node.name} ({node.admin_url}) read-only failed: {e}"
                    ) from e
                made.append(node.name)
        again = f"; made read-only again (writable while replicating): {', '.join(made)}" if made else ""
        return f"replication kept as it is: nodes with connections already: {', '.join(wired)}{again}"
    master = nodes[0]
    for node, driver in zip(nodes[1:], drivers[1:], strict=True):
        try:
            await driver.set_read_only(True)
            await driver.change_master(connection, ChangeMaster(master_address=master.protocol_address))
            await driver.start_replication(connection)
        except DriverError as e:
            raise BootstrapError(f"wiring {node.name} ({node.admin_url}) to {master.name} failed: {e}") from e
    replicas = ", ".join(n.name for n in nodes[1:])
    return f"{replicas} read-only, replicating from {master.name} ({master.protocol_address}) over {connection!r}"


async def register_cluster(
    settings: Settings, name: str, description: str, nodes: Sequence[NodeSpec]
) -> tuple[int, str]:
    """The cluster's id and what was done: registered with its servers, or found (and left as it is)."""
    engine = create_engine(settings)
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            existing = await ClusterService(session).find_by_name(name)
            if existing is not None:
                return existing.id, f"cluster {name!r} is registered already (id {existing.id}): left as it is"
            offsets = {n.admin_port - n.protocol_port for n in nodes}
            cluster = await ClusterService(session).create(
                ClusterCreate(
                    name=name, description=description, admin_port_offset=offsets.pop() if len(offsets) == 1 else None
                )
            )
            servers = ServerService(session)
            for node in nodes:
                await servers.create(
                    cluster.id,
                    ServerCreate(
                        name=node.name, host=node.host, protocol_port=node.protocol_port, admin_port=node.admin_port
                    ),
                    COMMAND_LINE,
                )
            return cluster.id, f"registered cluster {name!r} (id {cluster.id}) with {', '.join(n.name for n in nodes)}"
    finally:
        await engine.dispose()


async def bootstrap(
    settings: Settings,
    cluster: str,
    description: str,
    nodes: Sequence[NodeSpec],
    wait_s: float,
    say: Callable[[str], None],
) -> int:
    """Runs the three steps, reporting each through `say`; returns the cluster's id."""
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise BootstrapError(f"node names must differ: {', '.join(names)}")
    factory = DriverFactory(settings)
    try:
        drivers = [factory.for_address(ServerKind.ferry, n.admin_address) for n in nodes]
        statuses = await wait_for_nodes(drivers, nodes, wait_s)
        say(f"{len(nodes)} nodes answer: {', '.join(names)}")
        say(await wire_replication(drivers, nodes, statuses, settings.operations.replication_connection_name))
    finally:
        await factory.aclose()
    cluster_id, done = await register_cluster(settings, cluster, description, nodes)
    say(done)
    return cluster_id
