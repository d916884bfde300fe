"""Real MariaDB clusters for the backend tests: scripts/mariadb_cluster.py (loaded by path, so `make up` and the
tests share one implementation) plus what only tests need — the `mariadb` driver configured as Ferry's
least-privilege user, and condition waits with a deadline and a message naming what was awaited."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from ferry_control.drivers.mariadb import MariadbCredentials, MariadbDriver, MariadbDriverConfig
from tests.waiting import eventually, wait_until  # noqa: F401 (the MariaDB tests import them from here)

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
