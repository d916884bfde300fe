"""Prometheus metrics of the service, each one fed by real code paths: HTTP requests (count and latency per
handler, the route's operation name), collector cycles (duration), server polls (by outcome), whether this
instance is the collector's leader, events relayed between instances, operation durations and switchover
unavailability windows, drill outcomes, and rows the retention job removed.

Every app has its own registry, so several apps (tests) in one process do not collide.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Buckets for request latency and cycle duration (seconds).
# The `_created` series only repeat each series' start time; keep the exposition to the figures themselves.
disable_created_metrics()

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
            "Server polls by outcome (ok, error).",
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

    def render(self) -> bytes:
        return generate_latest(self.registry)


class RequestMetricsMiddleware:
    """Counts and times every HTTP request under its handler's name (`unmatched` when no route matched)."""

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
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            handler = getattr(scope.get("route"), "name", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.http_requests.labels(method, handler, str(status)).inc()
            self.metrics.http_request_seconds.labels(method, handler).observe(time.perf_counter() - started)
