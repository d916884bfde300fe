"""Builds the driver for a registered server: the kind picks the implementation, the settings give timeouts and
retries, and the node admin token comes from the cluster's token file, else the FERRY_NODE_TOKEN(_FILE) setting.
One httpx client (one connection pool) is shared by every driver the factory makes."""

from __future__ import annotations

from pathlib import Path

import httpx

from ferry_control.core.config import Settings
from ferry_control.drivers.base import ServerDriver
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.ferry import FerryDriver, FerryDriverConfig
from ferry_control.models import Cluster, Server, ServerKind


class DriverFactory:
    def __init__(self, settings: Settings, client: httpx.AsyncClient | None = None):
        self._settings = settings
        self._client = client or httpx.AsyncClient(
            limits=httpx.Limits(max_connections=settings.poll_concurrency_max * 2)
        )
        self._ferry_config = FerryDriverConfig(
            connect_timeout_s=settings.node_connect_timeout_s,
            read_timeout_s=settings.node_read_timeout_s,
            read_retries_max=settings.node_read_retries_max,
            retry_backoff_s=settings.node_retry_backoff_s,
        )

    def node_token(self, cluster_token_file: str | None) -> str | None:
        """The cluster's token file, else the settings' token, else the settings' token file."""
        if cluster_token_file:
            return _read_token(Path(cluster_token_file))
        if self._settings.node_token is not None:
            return self._settings.node_token.get_secret_value()
        if self._settings.node_token_file is not None:
            return _read_token(self._settings.node_token_file)
        return None

    def for_address(self, kind: ServerKind, admin_address: str, cluster_token_file: str | None = None) -> ServerDriver:
        if kind == ServerKind.ferry:
            return FerryDriver(
                self._client, admin_address, lambda: self.node_token(cluster_token_file), self._ferry_config
            )
        raise DriverError(admin_address, "unsupported_kind", f"no driver for servers of kind {kind.value!r} yet")

    def for_server(self, server: Server, cluster: Cluster | None = None) -> ServerDriver:
        """The server must have an admin address."""
        if server.admin_address is None:
            raise DriverError(server.host, "no_admin_address", f"server {server.name!r} has no admin port recorded")
        return self.for_address(server.kind, server.admin_address, cluster.node_token_file if cluster else None)

    async def aclose(self) -> None:
        await self._client.aclose()


def _read_token(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as e:
        raise DriverError(str(path), "node_token_unreadable", f"cannot read the node token file: {e}") from e
