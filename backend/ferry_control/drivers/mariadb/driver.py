"""The `mariadb` driver itself: `MariadbDriver`, the driver interface assembled from its parts (one module per
concern), and `MariadbPools`, the connection pools a driver factory keeps per server and login."""

from __future__ import annotations

from ferry_control.drivers.base import ServerDriver
from ferry_control.drivers.mariadb.canaries import MariadbCanaries
from ferry_control.drivers.mariadb.checksums import MariadbChecksums
from ferry_control.drivers.mariadb.chunks import MariadbChunks
from ferry_control.drivers.mariadb.config import MariadbDriverConfig
from ferry_control.drivers.mariadb.connection import MariadbConnections, PoolSettings
from ferry_control.drivers.mariadb.events import MariadbBinlogEvents
from ferry_control.drivers.mariadb.export import MariadbExport
from ferry_control.drivers.mariadb.parallel import MariadbParallelApply
from ferry_control.drivers.mariadb.preflight import MariadbPreflight
from ferry_control.drivers.mariadb.read_only import MariadbReadOnly
from ferry_control.drivers.mariadb.rebuild import MariadbRebuild
from ferry_control.drivers.mariadb.replication import MariadbReplication
from ferry_control.drivers.mariadb.rewind import MariadbRewind
from ferry_control.drivers.mariadb.status import MariadbStatus


class MariadbPools:
    """One connection pool per (server, login), kept for the owner's life (a driver factory builds a driver per call;
    the pools make those drivers share connections). `aclose` closes them all."""

    def __init__(self) -> None:
        self._pools: dict[tuple[str, PoolSettings], MariadbConnections] = {}

    def driver(self, address: str, config: MariadbDriverConfig) -> MariadbDriver:
        settings = config.connection_settings(address)
        pool = self._pools.get((address, settings))
        if pool is None:
            # A new login for the server (its credentials changed): the old login's pool goes.
            for key in [k for k in self._pools if k[0] == address]:
                self._pools.pop(key).retire()
            pool = self._pools[(address, settings)] = MariadbConnections(address, settings)
        return MariadbDriver(address, config, pool)

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


class MariadbDriver(
    MariadbStatus,
    MariadbReplication,
    MariadbParallelApply,
    MariadbReadOnly,
    MariadbPreflight,
    MariadbCanaries,
    MariadbBinlogEvents,
    MariadbExport,
    MariadbChecksums,
    MariadbChunks,
    MariadbRewind,
    MariadbRebuild,
    ServerDriver,
):
    """One MariaDB server at `address` (`host:port`, its SQL port). `connections` lets a factory share one pool per
    server between the drivers it builds; without it the driver has a pool of its own (closed by `aclose`)."""

    kind = "mariadb"
    delay_setting = "MASTER_DELAY"

    def __init__(self, address: str, config: MariadbDriverConfig, connections: MariadbConnections | None = None):
        self.address = address
        self.config = config
        self._owns_connections = connections is None
        self.sql = connections or MariadbConnections(address, config.connection_settings(address))

    async def aclose(self) -> None:
        if self._owns_connections:
            await self.sql.aclose()
