"""The stored state as Prometheus gauges, read from the database when /metrics is scraped: lag and running per
link (and domain), each server's position per domain, health and read-only flag, masters read-only while no
operation runs, writable replicas and errant transactions per server and domain (the replica guard's), operations
running, and each cluster's last drill. `export_stored_state` reads the rows (one short
transaction), `stored_state_samples` turns them into samples (no I/O), `apply` replaces the gauges' values with them.

Reading at scrape time (not in the collector) keeps the figures right on every instance — the collector's leader and
its standbys alike export what the leader stored — and costs five queries per scrape. Several instances scraped
together report the same series: aggregate with max() over `instance`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ferry_control.core.db import session_scope
from ferry_control.core.gtid import seq_by_domain
from ferry_control.core.metrics import Metrics
from ferry_control.models import DrillRun, HealthState, LinkSource, ReplicaGuard, ReplicationLink, Server
from ferry_control.repositories.metrics_export import MetricsExportRepository


@dataclass(frozen=True)
class Sample:
    gauge: str  #: the Metrics attribute
    labels: tuple[str, ...]
    value: float


def stored_state_samples(
    servers: Sequence[Server],
    links: Sequence[ReplicationLink],
    unfinished_operations: dict[int, int],
    last_drills: Sequence[DrillRun],
    guards: Sequence[ReplicaGuard] = (),
) -> Iterable[Sample]:
    by_id = {s.id: s for s in servers}
    guard_of = {g.server_id: g for g in guards}
    replicating = {link.replica_server_id for link in links if link.source == LinkSource.replica}
    cluster_names = {s.cluster_id: s.cluster.name for s in servers}
    masters = {link.master_server_id for link in links if link.master_server_id is not None}
    replicas = {link.replica_server_id for link in links}
    for link in links:
        replica = by_id.get(link.replica_server_id)
        if replica is None:
            continue
        master = by_id.get(link.master_server_id) if link.master_server_id is not None else None
        labels = (
            replica.cluster.name,
            replica.name,
            master.name if master else link.master_address or "",
            link.name or "",
        )
        yield Sample("replication_running", labels, 1.0 if link.running else 0.0)
        for domain, lag in (link.lag or {}).items():
            yield Sample("replication_lag_seconds", (*labels, str(domain)), float(lag.get("seconds", 0.0)))
            yield Sample("replication_lag_transactions", (*labels, str(domain)), float(lag.get("transactions", 0)))
    for server in servers:
        cluster = server.cluster.name
        for domain_id, seq_no in seq_by_domain(server.gtid_current_pos).items():
            yield Sample("server_gtid_seq_no", (cluster, server.name, str(domain_id)), float(seq_no))
        for state in HealthState:
            yield Sample("server_health", (cluster, server.name, state.value), 1.0 if server.health == state else 0.0)
        if server.read_only is not None:
            yield Sample("server_read_only", (cluster, server.name), 1.0 if server.read_only else 0.0)
        if server.id in masters and server.id not in replicas:
            stuck = bool(server.read_only) and not unfinished_operations.get(server.cluster_id)
            yield Sample("master_read_only_without_operation", (cluster, server.name), 1.0 if stuck else 0.0)
        guard = guard_of.get(server.id)
        if server.id in replicating and server.read_only is not None:
            allowed = guard is not None and bool(guard.writable_domains)
            writable = not server.read_only and not allowed
            yield Sample("replica_writable", (cluster, server.name), 1.0 if writable else 0.0)
        for errant in guard.errant if guard is not None else []:
            count = errant.get("transactions")
            yield Sample("server_errant_transactions", (cluster, server.name, str(errant["domain"])),
                         float(count) if count is not None else -1.0)  # fmt: skip
    for cluster_id, name in cluster_names.items():
        yield Sample("operations_running", (name,), float(unfinished_operations.get(cluster_id, 0)))
    for run in last_drills:
        drilled = cluster_names.get(run.cluster_id)
        if drilled is None:
            continue  # a cluster without servers: nothing else of it is exported either
        yield Sample("drill_last_passed", (drilled,), 1.0 if run.state == "passed" else 0.0)
        if run.finished_at is not None:
            yield Sample("drill_last_finished_timestamp_seconds", (drilled,), run.finished_at.timestamp())
        if run.rto_s is not None:
            yield Sample("drill_last_rto_seconds", (drilled,), run.rto_s)


def apply(metrics: Metrics, samples: Iterable[Sample]) -> None:
    """Replaces every stored-state gauge's series with `samples` (no await inside: a scrape sees all or none)."""
    samples = list(samples)
    for gauge in metrics.stored_state_gauges():
        gauge.clear()
    for sample in samples:
        getattr(metrics, sample.gauge).labels(*sample.labels).set(sample.value)


async def export_stored_state(sessionmaker: async_sessionmaker[AsyncSession], metrics: Metrics) -> None:
    """Reads the stored state and sets the gauges from it; call it right before rendering /metrics."""
    async with session_scope(sessionmaker) as session:
        repository = MetricsExportRepository(session)
        servers = await repository.servers()
        links = await repository.links()
        unfinished = await repository.unfinished_operations()
        drills = await repository.last_drills()
        guards = await repository.guards()
        samples = list(stored_state_samples(servers, links, unfinished, drills, guards))
    apply(metrics, samples)
