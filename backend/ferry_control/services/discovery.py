"""Discovery: register one server, then walk the replication graph from it.

From each server whose admin address is known, its status names
- its **masters**: each connection's master protocol address. A registered server at that address is reused;
  otherwise one is registered, with its admin port = protocol port + the cluster's `admin_port_offset` when the
  cluster sets one (as `make up` lays ports out), else with no admin port (recorded, not polled, until an
  operator sets it);
- its **replicas**: the master's list of streaming replicas gives each one's server_id, the host it connected
  from and — ferryd (API v1 since --advertise-host) — the protocol and admin addresses the replica advertises. A
  replica with advertised addresses is matched by protocol address, else registered with both ports, and visited
  in turn (so chains of replicas are found). One without them (a server kind that does not say) is matched by the
  server_id its own status reports once the whole reachable graph was visited, else registered with what is known
  (host and server_id) and polled once an operator sets its ports. An advertised wildcard host (0.0.0.0, ::) is
  replaced by the host the replica connected from.

No database connection is held while servers answer: what the graph led to so far is read as one wave, at most
`discovery_concurrency_max` servers at once (each bounded by `poll_timeout_s`, its answer validated as a poll's is),
after committing what was registered before it. Each transaction holds the cluster first (`ClusterService.hold`),
so a delete of the cluster waits for it or ends the discovery with a 404 — never a deadlock with it.

Only approved servers are visited (services/approval.py): every server discovery registers — the seed, a master a
replica names, a replica a master lists — is approved when the caller is an admin or the allow-list
(`server_trusted_hosts`) names its host, else registered pending and not visited, so an operator's discovery never
sends the cluster's credentials to an address a server (or the operator) made up. Every note quoting a server is
bounded and stripped (core/untrusted_text.py).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.db import release_connection
from ferry_control.core.errors import Forbidden
from ferry_control.core.outbound import check_host
from ferry_control.core.untrusted_text import bounded
from ferry_control.drivers.base import ConnectedReplica, ServerDriver, ServerStatus
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.factory import DriverFactory
from ferry_control.models import Cluster, Server, ServerKind, ServerOrigin
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.discovery import DiscoveryRequest
from ferry_control.services.approval import Approver, TrustedHosts, approve_address, approver_of, pending_reason
from ferry_control.services.clusters import ClusterService
from ferry_control.services.collection.addresses import split_address
from ferry_control.services.collection.validation import InvalidStatus, validate_status

#: Hosts a node may advertise when it listens on every interface: useless as an address to reach it.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


@dataclass
class Discovery:
    seed: Server
    added: list[Server] = field(default_factory=list)
    known: list[Server] = field(default_factory=list)
    notes: list[tuple[int | None, str]] = field(default_factory=list)

    def note(self, server_id: int | None, message: str) -> None:
        self.notes.append((server_id, bounded(message)))

    def saw(self, server: Server) -> None:
        if server not in self.added and server not in self.known and server is not self.seed:
            self.known.append(server)


class DiscoveryService:
    def __init__(self, session: AsyncSession, drivers: DriverFactory, settings: Settings):
        self.session = session
        self.servers = ServerRepository(session)
        self.clusters = ClusterService(session)
        self.drivers = drivers
        self.settings = settings
        self.trusted = TrustedHosts.of(settings.security.server_trusted_hosts)

    async def discover(self, cluster_id: int, request: DiscoveryRequest, by: Approver) -> Discovery:
        """`by`: the caller, whose say approves (or not) the addresses registered (see the module's doc)."""
        cluster = await self.clusters.get(cluster_id)
        await self.clusters.hold(cluster_id)
        seed = await self.servers.find_by_protocol_address(cluster_id, request.host, request.protocol_port)
        if seed is None:
            seed = await self._add(
                by,
                Server(
                    cluster_id=cluster_id,
                    name=await self._free_name(cluster_id, request.name or f"{request.host}:{request.protocol_port}"),
                    kind=request.kind,
                    host=request.host,
                    protocol_port=request.protocol_port,
                    admin_port=request.admin_port,
                    labels={},
                    origin=ServerOrigin.registered,
                ),
            )
        elif seed.admin_port != request.admin_port:
            if seed.approved and approver_of(seed.host, by, self.trusted) is None:
                raise Forbidden(
                    f"discovery would change the admin port of {seed.label} from {seed.admin_port} to "
                    f"{request.admin_port}: an admin's token is needed to send its cluster's credentials there",
                    code="address_change_needs_admin",
                )
            seed.admin_port = request.admin_port
            approve_address(seed, by, self.trusted)
        elif not seed.approved:  # the caller names it as the seed: their say, if it counts, approves it
            approve_address(seed, by, self.trusted)
        result = Discovery(seed=seed)

        queue: deque[Server] = deque([seed])
        visited: set[int] = set()
        streaming: list[tuple[Server, int, str]] = []  # (master, replica server_id, replica host)
        while queue:
            wave: list[Server] = []  # what the graph led to so far, read together
            while queue:
                server = queue.popleft()
                if server.id in visited:
                    continue
                if len(visited) >= self.settings.collection.discovery_servers_max:
                    result.note(None, f"stopped after visiting {len(visited)} servers (discovery_servers_max)")
                    queue.clear()
                    break
                visited.add(server.id)
                if server.admin_address is None:
                    result.note(server.id, f"{server.label} not visited: its admin address is unknown")
                elif not server.approved:
                    result.note(server.id, f"not visited: {pending_reason(server)}")
                else:
                    wave.append(server)
            for server, status in zip(wave, await self._statuses(cluster, wave), strict=True):
                if isinstance(status, str):
                    result.note(server.id, f"could not read the status of {server.label}: {status}")
                    continue
                server.reported_server_id = status.server_id
                for connection in status.connections:
                    master = await self._master(cluster, server.kind, connection.master_address, result, by)
                    if master is not None:
                        queue.append(master)
                for replica in status.replicas:
                    advertised = await self._advertised_replica(cluster, server, replica, result, by)
                    if advertised is None:
                        streaming.append((server, replica.server_id, replica.host))
                    elif advertised.admin_address is not None:
                        queue.append(advertised)
            await self.servers.flush()

        for master, replica_server_id, host in streaming:
            known = await self.servers.find_by_reported_server_id(cluster_id, replica_server_id)
            if known is not None:
                result.saw(known)
                continue
            try:
                host = check_host(host)
            except ValueError as e:
                result.note(None, f"replica with server_id {replica_server_id} not registered: {e}")
                continue
            added = await self._add(
                by,
                Server(
                    cluster_id=cluster_id,
                    name=await self._free_name(cluster_id, f"server-{replica_server_id}@{host}"),
                    kind=master.kind,
                    host=host,
                    reported_server_id=replica_server_id,
                    labels={},
                    origin=ServerOrigin.discovered,
                ),
            )
            result.added.append(added)
            result.note(
                added.id,
                f"replica with server_id {replica_server_id} of {master.label} registered from its connection "
                f"({host}); its protocol and admin ports are unknown: set them to have it polled",
            )
        return result

    async def _statuses(self, cluster: Cluster, servers: list[Server]) -> list[ServerStatus | str]:
        """Each server's status, validated, or why there is none. What was registered so far is committed first, so
        no database connection (on SQLite, the write lock) is held while servers answer; at most
        `discovery_concurrency_max` are asked at once, each bounded by `poll_timeout_s`."""
        if not servers:
            return []
        drivers: list[ServerDriver | str] = []
        for server in servers:
            try:
                drivers.append(self.drivers.for_server(server, cluster))
            except DriverError as e:
                drivers.append(str(e))
        await release_connection(self.session)
        semaphore = asyncio.Semaphore(self.settings.collection.discovery_concurrency_max)
        timeout_s = self.settings.collection.poll_timeout_s

        async def read(driver: ServerDriver | str) -> ServerStatus | str:
            if isinstance(driver, str):
                return driver
            async with semaphore:
                try:
                    async with asyncio.timeout(timeout_s):
                        status = await driver.status()
                    validate_status(status)
                    return status
                except DriverError as e:
                    return str(e)
                except TimeoutError:
                    return f"no answer within {timeout_s} s"
                except InvalidStatus as e:
                    return f"its status is not valid: {e}"

        statuses = list(await asyncio.gather(*(read(d) for d in drivers)))
        await self.clusters.hold(cluster.id)  # the next transaction's first statement: what follows writes
        return statuses

    async def _add(self, by: Approver, server: Server) -> Server:
        approve_address(server, by, self.trusted)
        return await self.servers.add(server)

    async def _advertised_replica(
        self, cluster: Cluster, master: Server, replica: ConnectedReplica, result: Discovery, by: Approver
    ) -> Server | None:
        """The replica as it advertises itself (matched or registered), or None when it advertises nothing usable."""
        listen = split_address(replica.listen_address or "")
        if listen is None:
            return None
        host = replica.host if listen[0] in WILDCARD_HOSTS else listen[0]
        admin = split_address(replica.admin_address or "")
        known = await self.servers.find_by_protocol_address(cluster.id, host, listen[1])
        if known is not None:
            result.saw(known)
            return known
        known = await self.servers.find_by_reported_server_id(cluster.id, replica.server_id)
        if known is not None and known.protocol_port is None:  # registered earlier without ports: complete it
            known.host, known.protocol_port = host, listen[1]
            known.admin_port = known.admin_port or (admin[1] if admin else None)
            approve_address(known, by, self.trusted)  # a new address: approved only as a new server would be
            result.saw(known)
            return known
        added = await self._add(
            by,
            Server(
                cluster_id=cluster.id,
                name=await self._free_name(cluster.id, f"{host}:{listen[1]}"),
                kind=master.kind,
                host=host,
                protocol_port=listen[1],
                admin_port=admin[1] if admin else None,
                reported_server_id=replica.server_id,
                labels={},
                origin=ServerOrigin.discovered,
            ),
        )
        result.added.append(added)
        return added

    async def _master(
        self, cluster: Cluster, kind: ServerKind, address: str, result: Discovery, by: Approver
    ) -> Server | None:
        """The master a replica names (matched by protocol address, else registered with the replica's kind)."""
        parsed = split_address(address)
        if parsed is None:
            result.note(None, f"master address {address!r} is not host:port")
            return None
        host, port = parsed
        master = await self.servers.find_by_protocol_address(cluster.id, host, port)
        if master is not None:
            result.saw(master)
            return master
        admin_port = None if cluster.admin_port_offset is None else port + cluster.admin_port_offset
        if admin_port is not None and not 1 <= admin_port <= 65535:
            admin_port = None
        master = await self._add(
            by,
            Server(
                cluster_id=cluster.id,
                name=await self._free_name(cluster.id, f"{host}:{port}"),
                kind=kind,
                host=host,
                protocol_port=port,
                admin_port=admin_port,
                labels={},
                origin=ServerOrigin.discovered,
            ),
        )
        result.added.append(master)
        if admin_port is None:
            result.note(
                master.id,
                f"master {address} registered without an admin port: set it, or the cluster's admin_port_offset",
            )
        return master

    async def _free_name(self, cluster_id: int, wanted: str) -> str:
        name, n = wanted, 1
        while await self.servers.find_by_name(cluster_id, name) is not None:
            n += 1
            name = f"{wanted}-{n}"
        return name
