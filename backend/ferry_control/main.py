"""The FastAPI application: `create_app()` wires settings, database, drivers, event bus, collector, metrics,
error handlers and the /api/v1 routers. Run it with `uvicorn --factory ferry_control.main:create_app`.

Everything the handlers reach lives on `app.state` and is built here, not in the lifespan, so tests can run the
app in-process (with their own sessionmaker) without starting the collector; the lifespan only starts and stops
the background tasks (the event relay between instances on PostgreSQL, the reconciler of operations a dead instance
left running, the collector, the drill scheduler) and
closes what the app opened. Each app is one instance (`app.state.instance_id`) for leases and relayed events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from ferry_control.api import router as api_router
from ferry_control.api.api_docs import mount_api_docs
from ferry_control.api.audit_middleware import AuditMiddleware
from ferry_control.api.body_limit import BodyLimitMiddleware
from ferry_control.api.denials import DenialTally
from ferry_control.api.deps import MetricsReader
from ferry_control.api.errors import install_error_handlers
from ferry_control.api.security_headers import SecurityHeadersMiddleware
from ferry_control.core.client_address import TrustedProxies
from ferry_control.core.concurrency import ConcurrencyLimit
from ferry_control.core.config import Settings, get_settings
from ferry_control.core.db import create_engine, create_sessionmaker
from ferry_control.core.heap import startup_heap_set_aside
from ferry_control.core.metrics import RequestMetricsMiddleware
from ferry_control.core.priority import lower_priority
from ferry_control.core.rate_limit import RateLimiter
from ferry_control.dashboard import dashboard_dir, mount_dashboard
from ferry_control.plane import ControlPlane
from ferry_control.services.live_positions import LivePositions
from ferry_control.services.metrics_export import export_stored_state
from ferry_control.services.stream_hub import StreamHub
from ferry_control.services.streams import StreamRegistry

DESCRIPTION = """Ferry's control plane: clusters of ferryd nodes (MariaDB-style GTID replication), their topology,
per-domain positions and lag, stream interleavings, and the operations that move the master role: switchover,
failover (automatic when enabled per cluster), repoint, read-only, start/stop replication, bring level, and drills.

Every endpoint but `/api/v1/health` needs `Authorization: Bearer <API token>` (so does `/metrics`, which also
accepts the `metrics_token` setting's token). Viewers read; operators also change
clusters and servers; admins also manage tokens. Errors always have the body `{"error": {"code", "message"}}`."""


def create_app(
    settings: Settings | None = None, *, sessionmaker: async_sessionmaker[AsyncSession] | None = None
) -> FastAPI:
    settings = settings or get_settings()
    engines: list[AsyncEngine] = []
    if sessionmaker is None:
        engines.append(create_engine(settings))
        sessionmaker = create_sessionmaker(engines[0])
        background = sessionmaker
        if not settings.database.is_sqlite:
            # Work that must never wait behind requests (a room of dashboards) gets connections of its own.
            engines.append(create_engine(settings, background=True))
            background = create_sessionmaker(engines[1])
    else:
        background = sessionmaker
    plane = ControlPlane(settings, sessionmaker, background)
    metrics = plane.metrics
    denials = DenialTally(sessionmaker)
    streams = StreamRegistry(
        sessionmaker,
        settings.streams.events_streams_per_token_max,
        settings.streams.events_streams_max,
        settings.collection.poll_interval_s,
    )
    hub = StreamHub(
        plane.bus,
        streams,
        metrics,
        settings.collection.poll_interval_s,
        settings.streams.events_ping_s,
        settings.streams.events_queue_max,
        LivePositions(sessionmaker, plane.drivers, settings),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if settings.process.role == "web":
            lower_priority(settings.process.web_nice)  # the worker's work goes first on a busy machine
        denials.start()
        await plane.start()
        hub.start()
        try:
            with startup_heap_set_aside():  # full collections walk only what came after start-up
                yield
        finally:
            await hub.stop()
            await plane.stop()
            await denials.stop()
            for engine in engines:
                await engine.dispose()

    docs = settings.process.api_docs
    app = FastAPI(
        title="Ferry control plane",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served from the installed package, not a CDN (api/api_docs.py)
        redoc_url=None,
        openapi_url="/openapi.json" if docs else None,
        openapi_tags=[
            {"name": "clusters"},
            {"name": "servers"},
            {"name": "discovery"},
            {"name": "topology"},
            {"name": "positions"},
            {"name": "interleavings"},
            {"name": "events"},
            {"name": "operations"},
            {"name": "drills"},
            {"name": "audit"},
            {"name": "tokens"},
            {"name": "health"},
            {"name": "roles"},
            {"name": "proxies"},
        ],
    )
    app.state.settings = settings
    app.state.plane = plane
    app.state.instance_id = plane.instance_id
    app.state.sessionmaker = sessionmaker
    app.state.metrics = metrics
    app.state.secrets = plane.secrets
    app.state.rate_limiter = RateLimiter(settings.reads.expensive_reads_per_min)
    app.state.auth_failures = RateLimiter(settings.security.auth_failures_per_min)
    app.state.trusted_proxies = TrustedProxies.of(settings.security.trusted_proxies)
    app.state.denials = denials
    app.state.heavy_reads = ConcurrencyLimit(settings.reads.heavy_reads_per_token_max, settings.reads.heavy_reads_max)
    app.state.streams = streams
    app.state.stream_hub = hub
    app.state.drivers = plane.drivers
    app.state.bus = plane.bus
    app.state.relay = plane.relay
    app.state.collector = plane.collector
    app.state.runner = plane.runner
    app.state.monitor = plane.monitor
    app.state.scheduler = plane.scheduler
    app.state.reconciler = plane.reconciler
    install_error_handlers(app)
    app.include_router(api_router)

    @app.get("/metrics", include_in_schema=False)
    async def prometheus_metrics(request: Request, _: MetricsReader) -> Response:
        await export_stored_state(request.app.state.sessionmaker, request.app.state.metrics)
        return Response(request.app.state.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    if docs:
        mount_api_docs(app, "/openapi.json")
    mount_dashboard(app, dashboard_dir())
    app.add_middleware(AuditMiddleware)
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics)
    app.add_middleware(BodyLimitMiddleware, limit=settings.security.request_body_bytes_max)  # before any parsing
    app.add_middleware(SecurityHeadersMiddleware)  # outermost: every answer carries them, a refusal's too
    return app
