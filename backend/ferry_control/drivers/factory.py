"""Builds the driver for a registered server: the kind picks the implementation, the settings give timeouts,
retries and TLS, and the credentials are those of the server's own cluster (decrypted here, from the cluster's
stored secrets): its node token, else the fleet's FERRY_NODE_TOKEN(_FILE) setting for ferry nodes.

ferry nodes are reached through one HTTP client (`node_http`: a few keep-alive connections per node address) kept
for the factory's life; MariaDB servers through a small connection pool per server and login."""

from __future__ import annotations

import ssl
from pathlib import Path

from ferry_control.core.config import Settings
from ferry_control.core.secrets import SecretBox, SecretsUnavailable
from ferry_control.drivers.base import HostAccess, ServerDriver
from ferry_control.drivers.credentials import NO_CREDENTIALS, ServerCredentials
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.drivers.ferry import FerryDriver, FerryDriverConfig
from ferry_control.drivers.mariadb import MariadbDriverConfig, MariadbPools
from ferry_control.drivers.node_http import NodeHttp
from ferry_control.models import Cluster, Server, ServerKind


class DriverFactory:
    def __init__(self, settings: Settings, secrets: SecretBox | None = None):
        self._settings = settings
        #: Opens the clusters' stored credentials (None: no key configured, so no cluster has any).
        self._secrets = secrets
        #: https with this CA when the settings name one, else plain http.
        self._tls: ssl.SSLContext | None = (
            ssl.create_default_context(cafile=str(settings.security.node_tls_ca_file))
            if settings.security.node_tls_ca_file
            else None
        )
        #: Every ferry node's admin API, one client (its connections kept per node address).
        self._node_http = NodeHttp(self._tls)
        #: One small connection pool per MariaDB server and login, kept for the factory's life.
        self._mariadb_pools = MariadbPools()
        self._ferry_config = FerryDriverConfig(
            connect_timeout_s=settings.nodes.connect_timeout_s,
            read_timeout_s=settings.nodes.read_timeout_s,
            read_retries_max=settings.nodes.read_retries_max,
            retry_backoff_s=settings.nodes.retry_backoff_s,
            scheme="https" if self._tls is not None else "http",
            canary_table=settings.drills.canary_table,
            protocol_timeout_s=settings.nodes.protocol_timeout_s,
            answer_bytes_max=settings.nodes.answer_bytes_max,
        )

    def credentials_for(self, cluster: Cluster | None) -> ServerCredentials:
        """The cluster's decrypted credentials (none stored, or no cluster: empty)."""
        if cluster is None or not cluster.credentials_ciphertext:
            return NO_CREDENTIALS
        if self._secrets is None:
            raise DriverError(
                cluster.name,
                "secrets_unavailable",
                "the cluster has stored credentials but no secret key is set",
                kind=ErrorKind.not_configured,
            )
        try:
            return ServerCredentials.of(self._secrets.decrypt(cluster.credentials_ciphertext))
        except SecretsUnavailable as e:
            raise DriverError(cluster.name, "secrets_unavailable", str(e), kind=ErrorKind.not_configured) from e

    def host_access(self, cluster: Cluster, host: str) -> HostAccess | None:
        """How to reach `host` (a server of `cluster`) over SSH: the cluster's host access with its private key
        decrypted for the call (schemas/host_access.py); None when the cluster has none set."""
        settings = cluster.host_access
        if settings is None or not cluster.host_access_key_ciphertext:
            return None
        if self._secrets is None:
            raise DriverError(
                cluster.name, "secrets_unavailable", "the cluster has a stored SSH key but no secret key is set",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        try:
            key = self._secrets.decrypt(cluster.host_access_key_ciphertext)["private_key"]
        except (SecretsUnavailable, KeyError) as e:
            raise DriverError(cluster.name, "secrets_unavailable", str(e), kind=ErrorKind.not_configured) from e
        return HostAccess(
            host=host, port=int(settings["port"]), user=str(settings["user"]), private_key=str(key),
            known_hosts=str(settings["known_hosts"]), stop_command=str(settings["stop_command"]),
            start_command=str(settings["start_command"]),
        )  # fmt: skip

    def node_token(self, credentials: ServerCredentials) -> str | None:
        """The cluster's own node token, else the settings' token, else the settings' token file."""
        if credentials.node_token:
            return credentials.node_token
        if self._settings.security.node_token is not None:
            return self._settings.security.node_token.get_secret_value()
        if self._settings.security.node_token_file is not None:
            return _read_token(self._settings.security.node_token_file)
        return None

    def for_address(
        self,
        kind: ServerKind,
        admin_address: str,
        credentials: ServerCredentials | None = None,
        protocol_address: str | None = None,
    ) -> ServerDriver:
        """A driver for the server at `admin_address`, holding the credentials of that server's cluster only
        (None: a server of no cluster yet, e.g. bootstrap — the fleet's node token only). `protocol_address`, where
        known, is where a ferry node serves its clients (its canary writes go there)."""
        credentials = credentials or NO_CREDENTIALS
        if kind == ServerKind.ferry:
            return FerryDriver(
                self._node_http, admin_address, lambda: self.node_token(credentials),
                self._ferry_config, protocol_address,
            )  # fmt: skip
        if kind == ServerKind.mariadb:
            # Ferry's login and the replication login come from the cluster's stored credentials only.
            config = MariadbDriverConfig.of_login(
                admin_address, user=credentials.db_user, password=credentials.db_password,
                replication_user=credentials.replication_user, replication_password=credentials.replication_password,
                tls_ca=credentials.tls_ca, connect_timeout_s=self._settings.nodes.connect_timeout_s,
                statement_timeout_s=self._settings.nodes.read_timeout_s,
            )  # fmt: skip
            return self._mariadb_pools.driver(admin_address, config)
        raise DriverError(
            admin_address, "unsupported_kind", f"no driver for servers of kind {kind.value!r} yet",
            kind=ErrorKind.not_configured,
        )  # fmt: skip

    def for_server(self, server: Server, cluster: Cluster | None = None) -> ServerDriver:
        """The server must have an admin address, approved (services/approval.py): a pending server's address is
        never contacted, so its cluster's credentials never go there."""
        if server.admin_address is None:
            raise DriverError(
                server.host, "no_admin_address", f"server {server.name!r} has no admin port recorded",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        if not server.approved:
            raise DriverError(
                server.host, "not_approved",
                f"server {server.name!r} is pending: its address awaits an admin's approval",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        return self.for_address(
            server.kind, server.admin_address, self.credentials_for(cluster), server.protocol_address
        )

    async def aclose(self) -> None:
        await self._node_http.aclose()
        await self._mariadb_pools.aclose()


def _read_token(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as e:
        raise DriverError(
            str(path), "node_token_unreadable", f"cannot read the node token file: {e}", kind=ErrorKind.not_configured
        ) from e
