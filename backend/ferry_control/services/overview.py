"""The clusters overview: each cluster's summary from its topology graph (a pure function) and its last drill."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from ferry_control.core.config import Settings
from ferry_control.core.gtid import position
from ferry_control.core.naming import unknown_server
from ferry_control.core.secrets import SecretBox
from ferry_control.core.security import Role
from ferry_control.repositories.drills import DrillRepository
from ferry_control.schemas.overview import ClusterHealth, ClusterOverview, ClusterSummary, LastDrill, WorstLag
from ferry_control.schemas.topology import LinkStall, TopologyGraph, TopologyNode
from ferry_control.services.clusters import ClusterService
from ferry_control.services.lag import worst
from ferry_control.services.topology import TopologyService


def shared_domains(masters: list[TopologyNode]) -> list[str]:
    """Masters (roots) that originate transactions in the same domain — their GTIDs there carry their own server
    ids — as problems in words: two origins of one domain diverge its history."""
    origins: dict[int, list[str]] = {}
    for node in masters:
        for gtid in position(node.gtid_current_pos):
            if gtid.server == node.reported_server_id:
                origins.setdefault(gtid.domain, []).append(node.label)
    return [
        f"{len(names)} masters write domain {domain}: {', '.join(names)}"
        for domain, names in sorted(origins.items())
        if len(names) > 1
    ]


def stall_words(stall: LinkStall) -> str:
    """In words: `stalled in domain 1: 185 transactions waiting, no progress for 7 s (Waiting for table lock)`."""
    domains = ", ".join(str(d) for d in stall.domains)
    words = (
        f"stalled in domain{'s' if len(stall.domains) > 1 else ''} {domains}: {stall.transactions_waiting} "
        f"transactions waiting, no progress for {stall.no_progress_s:.0f} s"
    )
    return f"{words} ({stall.reason})" if stall.reason else words


def summarize(graph: TopologyGraph) -> ClusterSummary:
    """Health of the whole, the master(s), how many replicas, the worst lag over every connection and domain, and
    the problems in words, each server named by its label (name and server_id): unhealthy or maintenance nodes,
    connection errors (in words, with what to do), stopped replication, several masters writing one domain, and the
    alerts (a writable replica, errant transactions, …); and the warnings: a SQL side
    stalled (by a lock wait, say: it goes on once the lock is let go, so it is flagged without making the cluster
    degraded). The worst lag is judged against each connection's configured delay (services/lag.py), named with its
    connection. Several masters are a shape, not a fault (the two-master shape: each writes its own domain)."""
    nodes, edges = graph.nodes, graph.edges
    problems: list[str] = []
    warnings: list[str] = []
    for node in nodes:
        if node.health != "healthy":
            problems.append(f"{node.label} {node.health}")
        if node.maintenance:
            problems.append(f"{node.label} in maintenance")
    labels = {node.registered_server_id: node.label for node in nodes}
    for edge in edges:
        replica = labels.get(edge.replica_registered_server_id, unknown_server(edge.replica_registered_server_id))
        if edge.last_error_code:
            problems.append(edge.last_error_words or f"{replica}: {edge.last_error_code}")
        elif edge.source == "replica" and not edge.running:
            problems.append(f"{replica}: replication stopped")
        elif edge.stall is not None:
            warnings.append(f"{replica}: {stall_words(edge.stall)}")
    masters = [node.name for node in nodes if node.role == "master"]
    standalone = [node.name for node in nodes if node.role == "standalone"]
    if not masters and len(standalone) == 1:
        masters.append(standalone[0])
    problems += shared_domains([node for node in nodes if node.role == "master"])
    problems += [alert.message for alert in graph.alerts]
    problems += [f"{node.label}: {warning}" for node in nodes for warning in node.warnings]
    unreachable = sum(1 for node in nodes if node.health == "unreachable")

    health: ClusterHealth = "healthy"
    if not nodes:
        health = "empty"
    elif unreachable == len(nodes) or not masters:
        health = "down"
    elif problems:
        health = "degraded"

    lags = [(lag, edge, domain) for edge in edges for domain, lag in edge.lag.items()]
    worst_lag = worst(lag for lag, _, _ in lags)
    on = next(((edge, domain) for lag, edge, domain in lags if lag is worst_lag), None)
    return ClusterSummary(
        health=health,
        problems=problems,
        warnings=warnings,
        masters=masters,
        replica_count=sum(1 for node in nodes if node.role in ("replica", "intermediate")),
        server_count=len(nodes),
        alerts=list(graph.alerts),
        worst_lag=(
            WorstLag(
                **worst_lag.model_dump(exclude={"reported_seconds"}),
                replica=labels.get(
                    on[0].replica_registered_server_id, unknown_server(on[0].replica_registered_server_id)
                ),
                connection=on[0].connection,
                domain=on[1],
            )
            if worst_lag is not None and on is not None
            else None
        ),
    )


class OverviewService:
    def __init__(self, session: AsyncSession, settings: Settings | None = None, secrets: SecretBox | None = None):
        self.clusters = ClusterService(session, settings, secrets)
        self.topology = TopologyService(session)
        self.drills = DrillRepository(session)

    async def overview(self, role: Role) -> list[ClusterOverview]:
        items = []
        for cluster in await self.clusters.list():
            summary = summarize(await self.topology.graph(cluster.id))
            runs = await self.drills.runs(cluster.id, limit=1)
            items.append(
                ClusterOverview(
                    **self.clusters.present(cluster, role).model_dump(),
                    **summary.model_dump(),
                    last_drill=LastDrill.model_validate(runs[0]) if runs else None,
                )
            )
        return items
