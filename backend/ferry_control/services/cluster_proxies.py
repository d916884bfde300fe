"""A cluster's proxies as the API shows them: a HAProxy configuration rendered for the cluster from what Ferry
knows of its servers (services/haproxy/config.py), and what the configured proxies say of it now
(services/proxies.py)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.errors import NotFound, Unprocessable
from ferry_control.models import Cluster
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.repositories.servers import ServerRepository
from ferry_control.services.haproxy.config import ProxiedServer, ProxyLayout, render
from ferry_control.services.proxies import ProxyState, proxy_states
from ferry_control.services.roles import RoleService


class ClusterProxies:
    def __init__(self, session: AsyncSession, settings: Settings):
        self.session = session
        self.settings = settings

    async def _cluster(self, cluster_id: int) -> Cluster:
        cluster = await ClusterRepository(self.session).get(cluster_id)
        if cluster is None:
            raise NotFound(f"cluster {cluster_id} does not exist")
        return cluster

    async def haproxy_config(self, cluster_id: int, layout: ProxyLayout) -> str:
        """The configuration's text; 422 when the layout's values cannot go in it."""
        cluster = await self._cluster(cluster_id)
        # The writer first: HAProxy starts every server up until its first check, and `balance first` then picks it.
        roles = RoleService(self.session)
        servers = sorted(
            [ProxiedServer(s.id, s.name, s.protocol_address)
             for s in await ServerRepository(self.session).list_for_cluster(cluster_id)
             if s.protocol_address is not None],
            key=lambda s: s.id,
        )  # fmt: skip
        writers = {s.id for s in servers if (await roles.writer(s.id)).ok}
        servers.sort(key=lambda s: s.id not in writers)
        try:
            return render(cluster.id, cluster.name, servers, layout)
        except ValueError as e:
            raise Unprocessable(str(e), code="validation_error") from e

    async def states(self, cluster_id: int) -> list[ProxyState]:
        """Each configured proxy in front of the cluster, read now."""
        await self._cluster(cluster_id)
        return await proxy_states(self.settings, cluster_id)
