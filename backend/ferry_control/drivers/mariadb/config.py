"""What the `mariadb` driver needs besides a server's address (the logins, TLS, bounds), the kind's rules
(`MariadbRules`), and `MariadbServer`: what every part of the driver works with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ferry_control.core.config import Settings
from ferry_control.drivers.errors import DriverError, ErrorKind
from ferry_control.drivers.kinds import KindRules
from ferry_control.drivers.mariadb.connection import MariadbConnections, PoolSettings
from ferry_control.drivers.mariadb.rows import split_address


@dataclass(frozen=True)
class MariadbCredentials:
    user: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class MariadbDriverConfig:
    """What the driver needs besides the server's address."""

    #: Ferry's monitor/admin user (least privilege: see scripts/mariadb_cluster.py ADMIN_GRANTS and mariadb.md).
    admin: MariadbCredentials
    #: Put into CHANGE MASTER so the replica can connect to its master (REPLICATION SLAVE only). Without it a
    #: CHANGE MASTER keeps the connection's existing user and password.
    replication: MariadbCredentials | None = None
    #: Verify the server's TLS certificate against this CA, a file or PEM text (neither: no TLS).
    tls_ca_file: str | None = None
    tls_ca: str | None = field(default=None, repr=False)
    connect_timeout_s: float = 3.0
    #: The server-side bound on an ordinary statement (longer waits carry their own bound).
    statement_timeout_s: float = 10.0
    #: Connections kept per server.
    connections_max: int = 3
    #: How often a position is re-read where the server has no wait of its own (a master), at most.
    position_poll_max_s: float = 0.1
    #: Bound on the binlog events one recent_events call reads (scans are kept, so a later call goes on from there).
    events_scan_max: int = 500_000
    #: Bound on the transactions kept of a server's binlog scans between calls (the newest files' are kept first).
    events_kept_max: int = 200_000
    #: A binlog file's first scan starts this many bytes before its end (at an event boundary the server finds,
    #: see MariadbBinlogEvents._boundary) rather than at its start, and older transactions are read in windows going
    #: back: a listing of recent transactions costs what it lists, not the file's size.
    events_tail_bytes: int = 256 * 1024
    #: How many times checksums are taken before giving up on a position that keeps moving.
    checksum_attempts: int = 5

    @classmethod
    def of_login(
        cls,
        address: str,
        *,
        user: str | None,
        password: str | None,
        replication_user: str | None,
        replication_password: str | None,
        tls_ca: str | None,
        connect_timeout_s: float,
        statement_timeout_s: float,
    ) -> MariadbDriverConfig:
        """The config from a cluster's stored logins (a driver factory's view of them); without a user for Ferry
        there is nothing to log in with."""
        if not user:
            raise DriverError(
                address, "no_db_credentials",
                "no database user is stored for this server's cluster (MariaDB needs one)",
                kind=ErrorKind.not_configured,
            )  # fmt: skip
        return cls(
            admin=MariadbCredentials(user, password or ""),
            replication=MariadbCredentials(replication_user, replication_password or "") if replication_user else None,
            tls_ca=tls_ca,
            connect_timeout_s=connect_timeout_s,
            statement_timeout_s=statement_timeout_s,
        )

    def connection_settings(self, address: str) -> PoolSettings:
        host, port = split_address(address)
        return PoolSettings(
            host=host, port=port, user=self.admin.user, password=self.admin.password, tls_ca_file=self.tls_ca_file,
            tls_ca=self.tls_ca,
            connect_timeout_s=self.connect_timeout_s, statement_timeout_s=self.statement_timeout_s,
            connections_max=self.connections_max,
        )  # fmt: skip


class MariadbRules(KindRules):
    """MariaDB servers: Ferry logs in with the cluster's stored db_user (nothing from the fleet's settings), over
    TLS only when the cluster stores a CA (tls_ca)."""

    kind = "mariadb"

    def plaintext(self, settings: Settings | None, secrets: Mapping[str, object]) -> bool:
        return secrets.get("db_user") is not None and secrets.get("tls_ca") is None


class MariadbServer:
    """What each part of the driver (status, replication, relay log, read-only, preflight, canaries, binlog events,
    checksums) works with: the server's address, the driver's config and its connections, set by `MariadbDriver`."""

    address: str
    config: MariadbDriverConfig
    sql: MariadbConnections
