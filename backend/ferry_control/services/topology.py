"""The topology graph of a cluster: its servers as nodes (with a role derived from the links) and its
replication links as edges."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.repositories.links import LinkRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.schemas.topology import DomainLagRead, TopologyEdge, TopologyGraph, TopologyNode
from ferry_control.services.clusters import ClusterService


class TopologyService:
    def __init__(self, session: AsyncSession):
        self.clusters = ClusterService(session)
        self.servers = ServerRepository(session)
        self.links = LinkRepository(session)

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
                host=s.host,
                protocol_port=s.protocol_port,
                admin_port=s.admin_port,
                reported_server_id=s.reported_server_id,
                health=s.health,
                maintenance=s.maintenance,
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
                lag={int(d): DomainLagRead(**v) for d, v in (link.lag or {}).items()},
                last_error_code=link.last_error_code,
                last_error_message=link.last_error_message,
                updated_at=link.updated_at,
            )
            for link in links
        ]
        return TopologyGraph(cluster_id=cluster_id, nodes=nodes, edges=edges)
