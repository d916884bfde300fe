"""Which clusters this instance collects, with several instances on one PostgreSQL database: each cluster is polled
(and watched by the failover monitor) by exactly one live instance, and the clusters are spread evenly.

A cluster belongs to the instance holding its session-level advisory lock (`pg_try_advisory_lock(LOCK_CLASS,
cluster_id)`), taken on a connection of the collector's own (application name `ferry-collector <instance id>`).
PostgreSQL frees a session's advisory locks the moment the session ends, so an instance that dies — SIGKILL, a lost
host, a dropped connection — gives its clusters back at once, and another instance takes them at its next cycle:
within two poll intervals, with no lease to run out first. Each cycle an instance counts the live collectors
(sessions of that application name on this database), takes free clusters up to its share (the clusters divided by
the live collectors, rounded up) and gives back what is beyond it, so a new instance gets its part within a cycle
or two.

A session that is alive but stuck keeps its locks; an instance whose lock connection fails loses all its clusters
at once and records nothing from the cycle under way (`LeaseLost`). SQLite runs one collector by nature and does
not use this."""

from __future__ import annotations

import logging
import math
from typing import Any

import psycopg

from ferry_control.repositories.advisory_locks import AdvisoryLocks
from ferry_control.services.event_relay import libpq_conninfo

log = logging.getLogger(__name__)

#: The advisory lock class of cluster ownership (the first key of the two-key form): "FERY".
LOCK_CLASS = 0x46455259
#: The lock connection's application name starts so (then the instance's id): live collectors are counted by it.
APPLICATION_NAME = "ferry-collector"
CONNECT_TIMEOUT_S = 5


class ClusterShare:
    def __init__(self, database_url: str, instance_id: str):
        self._conninfo = libpq_conninfo(database_url)
        #: As pg_stat_activity shows the lock session (at most 63 characters).
        self.application_name = f"{APPLICATION_NAME} {instance_id}"[:63]
        self._connection: psycopg.AsyncConnection[Any] | None = None
        #: The clusters this instance holds the lock of.
        self.held: set[int] = set()
        #: Live collectors at the last assignment.
        self.collectors = 0

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        if self._connection is None or self._connection.closed:
            self.held.clear()  # a new session holds nothing
            self._connection = await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                application_name=self.application_name,
            )  # fmt: skip
        return self._connection

    async def assign(self, clusters: list[int]) -> set[int]:
        """Takes and gives back clusters for this cycle; returns the ones this instance collects now. A failed
        connection loses every cluster (they are free for the others) and raises."""
        try:
            return await self._assign(sorted(clusters))
        except (psycopg.Error, OSError):
            await self.close()
            raise

    async def _assign(self, clusters: list[int]) -> set[int]:
        locks = AdvisoryLocks(await self._connect())
        live = await locks.sessions_named(APPLICATION_NAME + " ")
        self.collectors = max(live if live is not None else 1, 1)
        share = math.ceil(len(clusters) / self.collectors) if clusters else 0
        existing = set(clusters)
        surplus = sorted((self.held - existing) | set(sorted(self.held & existing)[share:]))
        for cluster_id in surplus:  # deleted clusters, and more than this instance's share
            await locks.unlock(LOCK_CLASS, cluster_id)
            self.held.discard(cluster_id)
        for cluster_id in clusters:
            if len(self.held) >= share:
                break
            if cluster_id in self.held:
                continue
            if await locks.try_lock(LOCK_CLASS, cluster_id):
                self.held.add(cluster_id)
        return set(self.held)

    async def alive(self) -> bool:
        """Whether the locks are still held (their session answers); a cycle records nothing otherwise."""
        if self._connection is None or self._connection.closed:
            return False
        try:
            await AdvisoryLocks(self._connection).ping()
            return True
        except (psycopg.Error, OSError):
            await self.close()
            return False

    async def close(self) -> None:
        """Ends the session, which frees every cluster it held."""
        connection, self._connection = self._connection, None
        self.held.clear()
        if connection is not None and not connection.closed:
            try:
                await connection.close()
            except (psycopg.Error, OSError):
                log.debug("closing the collector's lock connection failed", exc_info=True)
