"""The topology graph of a cluster: its servers as nodes (with a role derived from the links, and the replica
guard's errant transactions and writable domains), its replication links as edges (an error also in words, with
what to do), and its alerts: a master that is read-only while no operation runs (as the collector last saw it), a
replicating server that is writable while no operation runs, a replicating server holding errant transactions,
and a last operation that was interrupted by the death of its API instance."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.drivers.replication_errors import classify
from ferry_control.models import OperationState, ReplicaGuard, ReplicationLink, Server
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.replica_guard import ReplicaGuardRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.server import MaintenanceRead
from ferry_control.schemas.topology import (
    ClusterAlert,
    ErrantDomainRead,
    TopologyEdge,
    TopologyGraph,
    TopologyNode,
)
from ferry_control.services.clusters import ClusterService
from ferry_control.services.errant import errant_words
from ferry_control.services.lag import domain_lag, worst
from ferry_control.services.link_health import link_settings, stall
from ferry_control.services.replication_advice import connection_error_words


class TopologyService:
    def __init__(self, session: AsyncSession):
        self.clusters = ClusterService(session)
        self.servers = ServerRepository(session)
        self.links = LinkRepository(session)
        self.cluster_rows = ClusterRepository(session)
        self.operations = OperationRepository(session)
        self.guards = ReplicaGuardRepository(session)

    async def graph(self, cluster_id: int) -> TopologyGraph:
        cluster = await self.clusters.get(cluster_id)
        servers = await self.servers.list_for_cluster(cluster_id)
        links = await self.links.list_for_cluster(cluster_id)
        guards = await self.guards.for_clusters([cluster_id])
        by_id = {s.id: s for s in servers}
        masters = {link.master_server_id for link in links if link.master_server_id is not None}
        replicas = {link.replica_server_id for link in links}
        nodes = [
            TopologyNode(
                registered_server_id=s.id,
                name=s.name,
                label=s.label,
                kind=s.kind,
                version=s.version,
                binlog_format=s.binlog_format,
                replicas_may_be_ahead=s.replicas_may_be_ahead,
                warnings=list(s.warnings or []),
                host=s.host,
                protocol_port=s.protocol_port,
                admin_port=s.admin_port,
                reported_server_id=s.reported_server_id,
                health=s.health,
                maintenance=s.maintenance,
                maintenance_detail=None if (m := s.maintenance_detail) is None else MaintenanceRead.model_validate(m),
                read_only=s.read_only,
                role=(
                    "intermediate"
                    if s.id in masters and s.id in replicas
                    else "master"
                    if s.id in masters
                    else "replica"
                    if s.id in replicas
                    else "standalone"
                ),
                gtid_current_pos=s.gtid_current_pos,
                errant=[ErrantDomainRead.model_validate(e) for e in _guard_field(guards, s.id, "errant")],
                writable_domains=[int(d) for d in _guard_field(guards, s.id, "writable_domains")],
            )
            for s in servers
        ]
        errant_of = {n.registered_server_id: [e.model_dump(mode="json") for e in n.errant] for n in nodes}
        now = datetime.now(UTC)
        edges = [
            TopologyEdge(
                link_id=link.id,
                source=link.source,
                connection=link.name,
                master_registered_server_id=link.master_server_id,
                master_address=link.master_address,
                replica_registered_server_id=link.replica_server_id,
                running=link.running,
                io_state=link.io_state,
                sql_state=link.sql_state,
                waiting_for_relay_space=link.waiting_for_relay_space,
                lag=(lag := {int(d): domain_lag(v, link.settings) for d, v in (link.lag or {}).items()}),
                worst_lag=worst(lag.values()),
                last_error_code=link.last_error_code,
                last_error_message=link.last_error_message,
                last_error_words=_error_words(link, by_id, errant_of),
                updated_at=link.updated_at,
                settings=link_settings(link),
                sql_state_detail=link.sql_state_detail,
                stall=stall(link, now),
            )
            for link in links
        ]
        alerts = await self.alerts(cluster_id, nodes, edges, cluster.enforce_read_only_replicas)
        return TopologyGraph(cluster_id=cluster_id, nodes=nodes, edges=edges, alerts=alerts)

    async def alerts(
        self, cluster_id: int, nodes: list[TopologyNode], edges: list[TopologyEdge] | None = None,
        enforce_read_only_replicas: bool = True,
    ) -> list[ClusterAlert]:  # fmt: skip
        found = []
        lock = await self.cluster_rows.lock_state(cluster_id)
        busy = lock is not None and lock.operation_id is not None
        found += replica_alerts(nodes, edges or [], busy=busy, enforce=enforce_read_only_replicas)
        masters = [n for n in nodes if n.role == "master"]
        if not masters:
            standalone = [n for n in nodes if n.role == "standalone"]
            masters = standalone if len(standalone) == 1 else []
        for node in masters:
            if node.read_only and not busy:
                found.append(
                    ClusterAlert(
                        kind="master_read_only",
                        message=f"master {node.name} is read-only and no operation is running: clients cannot write",
                        registered_server_id=node.registered_server_id,
                    )
                )
        last = await self.operations.latest_finished(cluster_id)
        if last is not None and last.state == OperationState.interrupted:
            found.append(
                ClusterAlert(
                    kind="operation_interrupted",
                    message=f"operation {last.id} ({last.type}) was interrupted: {last.error}",
                    operation_id=last.id,
                )
            )
        return found


def _error_words(link: ReplicationLink, by_id: dict[int, Server], errant_of: dict[int, list[Any]]) -> str | None:
    """The link's error in words with what to do (services/replication_advice.py); None without one."""
    if not link.last_error_code:
        return None
    replica = by_id.get(link.replica_server_id)
    master = by_id.get(link.master_server_id) if link.master_server_id is not None else None
    return connection_error_words(
        replica.label if replica is not None else "the replica",
        master.label if master is not None else (link.master_address or "its master"),
        classify(replica.kind, link.last_error_code) if replica is not None else None,
        link.last_error_code,
        link.last_error_message,
        errant_of.get(link.replica_server_id),
    )


def _guard_field(guards: dict[int, ReplicaGuard], server_id: int, name: str) -> list[Any]:
    guard = guards.get(server_id)
    return list(getattr(guard, name)) if guard is not None else []


def replica_alerts(
    nodes: list[TopologyNode], edges: list[TopologyEdge], *, busy: bool, enforce: bool
) -> list[ClusterAlert]:
    """A replicating server that answered writable (while no operation runs: an operation owns read-only then), and
    a replicating server holding errant transactions, each in words."""
    labels = {n.registered_server_id: n.label for n in nodes}
    masters_of: dict[int, list[str]] = {}
    for edge in edges:
        if edge.master_registered_server_id is not None:
            masters_of.setdefault(edge.replica_registered_server_id, []).append(
                labels.get(edge.master_registered_server_id, "?")
            )
        elif edge.master_address:
            masters_of.setdefault(edge.replica_registered_server_id, []).append(edge.master_address)
    found = []
    for node in nodes:
        masters = masters_of.get(node.registered_server_id, [])
        replicates = node.role in ("replica", "intermediate") and bool(masters)
        if replicates and node.read_only is False and not node.writable_domains and not busy:
            if node.maintenance:
                then = "it is in maintenance, so it is left as it is: make it read-only when the work is done"
            elif not enforce:
                then = "enforce_read_only_replicas is off for this cluster: make it read-only, or turn the setting on"
            else:
                then = "the control plane makes it read-only at its next look"
            found.append(
                ClusterAlert(
                    kind="writable_replica",
                    message=f"{node.label} replicates {', '.join(masters)} and is writable: a client's write there "
                    f"splits the cluster's history ({then})",
                    registered_server_id=node.registered_server_id,
                )
            )
        if node.errant:
            findings = [e.model_dump(mode="json") for e in node.errant]
            found.append(
                ClusterAlert(
                    kind="errant_transactions",
                    message=errant_words(node.label, masters, findings),
                    registered_server_id=node.registered_server_id,
                )
            )
    return found
