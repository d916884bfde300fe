"""Builds the driver for a registered server: the kind picks the implementation, the settings give timeouts and
retries, and the node admin token comes from the cluster's token file, else the FERRY_NODE_TOKEN(_FILE) setting.

Every server address gets its own small httpx client (connection pool), kept for the factory's life: one pool
shared by a hundred servers spent most of the collector's CPU matching each request against every pooled
connection (httpcore scans them all), while per-address pools hold a connection or two each."""

from __future__ import annotations

from pathlib import Path

import httpx

from ferry_control.core.config import Settings
from ferry_control.drivers.base import ServerDriver
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.ferry import FerryDriver, FerryDriverConfig
from ferry_control.models import Cluster, Server, ServerKind

#: Connections kept per server address (a poll and an operation's calls may overlap).
CONNECTIONS_PER_SERVER_MAX = 4


class DriverFactory:
    def __init__(self, settings: Settings, client: httpx.AsyncClient | None = None):
        self._settings = settings
        #: When given, one client for every address (tests); else one per address.
        self._shared = client
        self._clients: dict[str, httpx.AsyncClient] = {}
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
                self._client(admin_address), admin_address, lambda: self.node_token(cluster_token_file),
                self._ferry_config,
            )  # fmt: skip
        raise DriverError(admin_address, "unsupported_kind", f"no driver for servers of kind {kind.value!r} yet")

    def for_server(self, server: Server, cluster: Cluster | None = None) -> ServerDriver:
        """The server must have an admin address."""
        if server.admin_address is None:
            raise DriverError(server.host, "no_admin_address", f"server {server.name!r} has no admin port recorded")
        return self.for_address(server.kind, server.admin_address, cluster.node_token_file if cluster else None)

    def _client(self, address: str) -> httpx.AsyncClient:
        if self._shared is not None:
            return self._shared
        client = self._clients.get(address)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(limits=httpx.Limits(max_connections=CONNECTIONS_PER_SERVER_MAX))
            self._clients[address] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
        if self._shared is not None:
            await self._shared.aclose()


def _read_token(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as e:
        raise DriverError(str(path), "node_token_unreadable", f"cannot read the node token file: {e}") from e
