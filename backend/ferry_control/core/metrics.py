"""Prometheus metrics of the service, each one fed by real code paths: HTTP requests (count and latency per
handler, the route's operation name), collector cycles (duration), server polls (by outcome), whether this
instance is the collector's leader, events relayed between instances, operation durations and switchover
unavailability windows, drill outcomes, and rows the retention job removed; and gauges of the stored state (lag
and running per link and domain, positions, health, read-only, masters read-only outside an operation, operations
running, each cluster's last drill), set from the database when /metrics is scraped (services/metrics_export.py).

Every app has its own registry, so several apps (tests) in one process do not collide.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Buckets for request latency and cycle duration (seconds).
# The `_created` series only repeat each series' start time; keep the exposition to the figures themselves.
disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.http_requests = Counter(
            "ferry_control_http_requests",
            "HTTP requests answered, by method, handler (the route's operation name) and status code.",
            ["method", "handler", "status"],
            registry=self.registry,
        )
        self.http_request_seconds = Histogram(
            "ferry_control_http_request_seconds",
            "Time from request to the end of the response, by method and handler.",
            ["method", "handler"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.collector_cycle_seconds = Histogram(
            "ferry_control_collector_cycle_seconds",
            "Duration of one collector cycle (poll every server, store what changed).",
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.collector_polls = Counter(
            "ferry_control_collector_polls",
            "Server polls by outcome (ok; error: no answer or refused; invalid: answered nonsense).",
            ["outcome"],
            registry=self.registry,
        )
        self.collector_leader = Gauge(
            "ferry_control_collector_leader",
            "1 while this instance holds the collector's lease (it polls), 0 while it is a standby or stopped.",
            registry=self.registry,
        )
        self.event_relay_events = Counter(
            "ferry_control_event_relay_events",
            "Cluster events relayed between API instances (PostgreSQL NOTIFY), by outcome: sent, received, "
            "dropped (outbox full, too big, or the database refused them).",
            ["outcome"],
            registry=self.registry,
        )
        self.event_relay_listening = Gauge(
            "ferry_control_event_relay_listening",
            "1 while this instance listens for other instances' events, 0 while it reconnects.",
            registry=self.registry,
        )
        self.event_streams = Gauge(
            "ferry_control_event_streams",
            "Event streams (open dashboards) this instance is serving.",
            registry=self.registry,
        )
        self.event_stream_events_dropped = Counter(
            "ferry_control_event_stream_events_dropped",
            "Events not sent to a stream whose client did not read them fast enough (the oldest waiting first).",
            registry=self.registry,
        )
        self.operation_seconds = Histogram(
            "ferry_control_operation_seconds",
            "Duration of orchestrator operations, by type and final state.",
            ["type", "state"],
            buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
            registry=self.registry,
        )
        self.switchover_unavailable_seconds = Histogram(
            "ferry_control_switchover_unavailable_seconds",
            "Write-unavailability window of master moves (old master read-only to new master writable), by type.",
            ["type"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
            registry=self.registry,
        )
        self.read_only_enforcements = Counter(
            "ferry_control_read_only_enforcements",
            "Replicas seen writable that the replica guard made read-only (enforced) or could not (failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.drill_runs = Counter(
            "ferry_control_drill_runs",
            "Drill runs by outcome (passed, failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.retention_rows_deleted = Counter(
            "ferry_control_retention_rows_deleted",
            "Samples removed by the retention job, by table.",
            ["table"],
            registry=self.registry,
        )

        # The stored state, as the collector last saw it; labels name clusters and servers by name.
        link = ["cluster", "replica", "master", "connection"]
        self.replication_lag_seconds = Gauge(
            "ferry_control_replication_lag_seconds",
            "A replication link's lag in one domain, in seconds, as the replica reports it.",
            [*link, "domain"],
            registry=self.registry,
        )
        self.replication_lag_transactions = Gauge(
            "ferry_control_replication_lag_transactions",
            "A replication link's lag in one domain, in transactions behind its master's binlog.",
            [*link, "domain"],
            registry=self.registry,
        )
        self.replication_running = Gauge(
            "ferry_control_replication_running",
            "1 while a replication connection runs, 0 when it is stopped.",
            link,
            registry=self.registry,
        )
        self.server_gtid_seq_no = Gauge(
            "ferry_control_server_gtid_seq_no",
            "A server's position in one domain: the sequence number of its GTID there (gtid_current_pos).",
            ["cluster", "server", "domain"],
            registry=self.registry,
        )
        self.server_health = Gauge(
            "ferry_control_server_health",
            "1 for the server's health state (unknown, healthy, failing, unreachable), 0 for the others.",
            ["cluster", "server", "state"],
            registry=self.registry,
        )
        self.server_read_only = Gauge(
            "ferry_control_server_read_only",
            "1 when the server reported read-only, 0 when writable (absent before its first poll).",
            ["cluster", "server"],
            registry=self.registry,
        )
        self.master_read_only_without_operation = Gauge(
            "ferry_control_master_read_only_without_operation",
            "1 when a master (it has replicas and replicates from none) is read-only while no operation is pending "
            "or running in its cluster: nothing can write. 0 otherwise.",
            ["cluster", "server"],
            registry=self.registry,
        )
        self.replica_writable = Gauge(
            "ferry_control_replica_writable",
            "1 when a server replicates (it has a replication connection), answered writable and no admin made it "
            "writable for its own domains: it can take clients' writes apart from its master. 0 otherwise.",
            ["cluster", "server"],
            registry=self.registry,
        )
        self.server_errant_transactions = Gauge(
            "ferry_control_server_errant_transactions",
            "Transactions a replicating server wrote itself in a domain that none of its masters has (errant), from "
            "the first after its last replicated one to its newest (-1 when they interleave with replicated ones "
            "and cannot be counted from positions). Absent: none.",
            ["cluster", "server", "domain"],
            registry=self.registry,
        )
        self.operations_running = Gauge(
            "ferry_control_operations_running",
            "Operations pending or running, per cluster.",
            ["cluster"],
            registry=self.registry,
        )
        self.drill_last_passed = Gauge(
            "ferry_control_drill_last_passed",
            "1 when the cluster's last drill with an outcome passed, 0 when it failed (absent before the first).",
            ["cluster"],
            registry=self.registry,
        )
        self.drill_last_finished_timestamp_seconds = Gauge(
            "ferry_control_drill_last_finished_timestamp_seconds",
            "When the cluster's last drill with an outcome ended (Unix time).",
            ["cluster"],
            registry=self.registry,
        )
        self.drill_last_rto_seconds = Gauge(
            "ferry_control_drill_last_rto_seconds",
            "Write unavailability of the cluster's last drill with an outcome.",
            ["cluster"],
            registry=self.registry,
        )

    def stored_state_gauges(self) -> list[Gauge]:
        """The gauges set from the stored state at each scrape (cleared first: gone links and servers vanish)."""
        return [
            self.replication_lag_seconds, self.replication_lag_transactions, self.replication_running,
            self.server_gtid_seq_no, self.server_health, self.server_read_only,
            self.master_read_only_without_operation, self.replica_writable, self.server_errant_transactions,
            self.operations_running, self.drill_last_passed, self.drill_last_finished_timestamp_seconds,
            self.drill_last_rto_seconds,
        ]  # fmt: skip

    def render(self) -> bytes:
        return generate_latest(self.registry)


class RequestMetricsMiddleware:
    """Counts and times every HTTP request under its handler's name (`unmatched` when no route matched); each
    response says how long its handler took in a `Server-Timing: app;dur=<ms>` header."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # How long the handler took before answering (a browser's developer tools show it; a client can
                # tell the server's time from the network's and its own).
                elapsed_ms = 1000 * (time.perf_counter() - started)
                timing = (b"server-timing", b"app;dur=%.1f" % elapsed_ms)
                message = {**message, "headers": [*message.get("headers", ()), timing]}
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            handler = getattr(scope.get("route"), "name", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.http_requests.labels(method, handler, str(status)).inc()
            self.metrics.http_request_seconds.labels(method, handler).observe(time.perf_counter() - started)
