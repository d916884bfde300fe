"""The topology graph of a cluster: its servers as nodes (with a role derived from the links), its replication
links as edges, and its alerts: a master that is read-only while no operation runs (as the collector last saw it),
and a last operation that was interrupted by the death of its API instance."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.models import OperationState
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.operations import OperationRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.server import MaintenanceRead
from ferry_control.schemas.topology import ClusterAlert, DomainLagRead, TopologyEdge, TopologyGraph, TopologyNode
from ferry_control.services.clusters import ClusterService
from ferry_control.services.link_health import link_settings, stall


class TopologyService:
    def __init__(self, session: AsyncSession):
        self.clusters = ClusterService(session)
        self.servers = ServerRepository(session)
        self.links = LinkRepository(session)
        self.cluster_rows = ClusterRepository(session)
        self.operations = OperationRepository(session)

    async def graph(self, cluster_id: int) -> TopologyGraph:
        await self.clusters.get(cluster_id)
        servers = await self.servers.list_for_cluster(cluster_id)
        links = await self.links.list_for_cluster(cluster_id)
        masters = {link.master_server_id for link in links if link.master_server_id is not None}
        replicas = {link.replica_server_id for link in links}
        nodes = [
            TopologyNode(
                server_id=s.id,
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
            )
            for s in servers
        ]
        now = datetime.now(UTC)
        edges = [
            TopologyEdge(
                link_id=link.id,
                source=link.source,
                connection=link.name,
                master_server_id=link.master_server_id,
                master_address=link.master_address,
                replica_server_id=link.replica_server_id,
                running=link.running,
                io_state=link.io_state,
                sql_state=link.sql_state,
                waiting_for_relay_space=link.waiting_for_relay_space,
                lag={int(d): DomainLagRead(**v) for d, v in (link.lag or {}).items()},
                last_error_code=link.last_error_code,
                last_error_message=link.last_error_message,
                updated_at=link.updated_at,
                settings=link_settings(link),
                sql_state_detail=link.sql_state_detail,
                stall=stall(link, now),
            )
            for link in links
        ]
        return TopologyGraph(
            cluster_id=cluster_id, nodes=nodes, edges=edges, alerts=await self.alerts(cluster_id, nodes)
        )

    async def alerts(self, cluster_id: int, nodes: list[TopologyNode]) -> list[ClusterAlert]:
        found = []
        lock = await self.cluster_rows.lock_state(cluster_id)
        busy = lock is not None and lock.operation_id is not None
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
                        server_id=node.server_id,
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
