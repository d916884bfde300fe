"""The `mariadb` driver: the driver interface over a real MariaDB 10.11 server's SQL (aiomysql; see
../shared/mariadb.md for the statements, columns and privileges it relies on), one module per concern:

- `connection`: a small pool of connections per server and login; every statement bounded on the server and the
  client, and killed when its caller gives up; the password never where the server could read it;
- `errors`: the server's errno as a typed driver error of its kind; `rows`: status, replica and binlog-event rows
  turned into the interface's types (no I/O);
- `config`: what the driver needs (the logins, TLS, bounds) and the kind's credential and transport rules;
- `status`, `replication`, `relay` (a stopped connection's relay log), `parallel` (parallel apply changed online),
  `read_only` (and the sessions that bypass it), `preflight`, `canaries`, `events` (binlog scans kept per server),
  `checksums`: the driver's parts;
- `driver`: `MariadbDriver` assembled from them, and `MariadbPools`, a factory's pools.

It connects as Ferry's least-privilege monitor/admin user and gives replicas the replication user's credentials in
CHANGE MASTER. None of its statements writes a GTID: the FLUSH statements are NO_WRITE_TO_BINLOG, and the rest
(SET GLOBAL, CHANGE MASTER, START/STOP/RESET SLAVE, KILL, CHECKSUM TABLE) are never binlogged."""

from ferry_control.drivers.mariadb.config import MariadbCredentials, MariadbDriverConfig, MariadbRules
from ferry_control.drivers.mariadb.driver import MariadbDriver, MariadbPools
from ferry_control.drivers.mariadb.status import SemiSyncState

__all__ = [
    "MariadbCredentials",
    "MariadbDriver",
    "MariadbDriverConfig",
    "MariadbPools",
    "MariadbRules",
    "SemiSyncState",
]
