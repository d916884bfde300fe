"""Thin routers under /api/v1: authenticate, parse, call one service, map to a schema. `router` gathers them."""

from fastapi import APIRouter

from ferry_control.api import (
    archives,
    audit_log,
    clusters,
    consumers,
    discovery,
    drills,
    events,
    health,
    host_access,
    interleavings,
    me,
    operations,
    parallel_apply,
    positions,
    proxies,
    roles,
    servers,
    tokens,
    topology,
    writable_domains,
)

router = APIRouter(prefix="/api/v1")
for module in (
    health,
    clusters,
    host_access,
    servers,
    parallel_apply,
    consumers,
    discovery,
    topology,
    positions,
    interleavings,
    events,
    operations,
    archives,
    drills,
    audit_log,
    tokens,
    me,
    roles,
    proxies,
    writable_domains,
):
    router.include_router(module.router)
