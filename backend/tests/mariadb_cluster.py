"""Real MariaDB clusters for the backend tests: scripts/mariadb_cluster.py (loaded by path, so `make up` and the
tests share one implementation) plus what only tests need — the `mariadb` driver configured as Ferry's
least-privilege user, and condition waits with a deadline and a message naming what was awaited."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from ferry_control.drivers.mariadb import MariadbCredentials, MariadbDriver, MariadbDriverConfig

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Bound on every condition the MariaDB tests wait for.
WAIT_S = 30.0


def _cluster_module() -> ModuleType:
    path = REPO_ROOT / "scripts" / "mariadb_cluster.py"
    spec = importlib.util.spec_from_file_location("ferry_scripts_mariadb_cluster", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cluster_module = _cluster_module()
MariadbCluster = cluster_module.MariadbCluster

T = TypeVar("T")


def driver_config(cluster: MariadbCluster, **overrides: object) -> MariadbDriverConfig:  # type: ignore[valid-type]
    """The driver as Ferry runs it: the least-privilege admin user, and the replication user for CHANGE MASTER."""
    users = cluster.users
    fields: dict[str, object] = {
        "admin": MariadbCredentials(users.admin.name, users.admin.password),
        "replication": MariadbCredentials(users.replication.name, users.replication.password),
        "connect_timeout_s": 5.0,
        "statement_timeout_s": 10.0,
    }
    return MariadbDriverConfig(**{**fields, **overrides})  # type: ignore[arg-type]


def driver(cluster: MariadbCluster, number: int, **overrides: object) -> MariadbDriver:  # type: ignore[valid-type]
    return MariadbDriver(cluster.server(number).address, driver_config(cluster, **overrides))


def wait_until(what: str, check: Callable[[], T | None], timeout_s: float = WAIT_S) -> T:
    """Calls `check` until it returns something truthy (returned), failing after `timeout_s` with `what`."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last: {result!r})")
        time.sleep(0.02)


async def eventually(what: str, check: Callable[[], T | None | Awaitable[T | None]], timeout_s: float = WAIT_S) -> T:
    """Like `wait_until` inside a test's event loop: `check` may be a coroutine function, and the loop runs between
    two checks."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what} (last: {result!r})")
        await asyncio.sleep(0.02)
