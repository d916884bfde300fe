"""Parallel apply on a MariaDB replica, changed online: the connection's `name`.slave_parallel_mode (its own) and
the server's slave_parallel_threads and slave_domain_parallel_threads (one worker pool for every connection).

Measured on 10.11: `SET GLOBAL slave_parallel_threads` / `slave_domain_parallel_threads` is refused (1198) while any
connection's SQL thread runs — a running IO thread does not matter; `SET GLOBAL name.slave_parallel_mode` while
that connection's SQL thread runs. Stopping the SQL thread alone is not enough to change them safely, though: a
parallel SQL thread applying several domains stops with each domain at its own point, and the relay log position
it restarts from is the oldest of them — a SQL thread started again alone re-reads what the domains ahead had
committed, and applies it again (seen: error 1950 under gtid_strict_mode, going from 8 workers to none; without
strict mode it would be applied twice). So every connection the change concerns is stopped whole (STOP SLAVE 'c':
the SQL thread ends at a transaction boundary) and started again whole (START SLAVE 'c'), whatever happened in
between: in GTID mode a start discards the relay log and asks the master for what follows gtid_slave_pos in each
domain (kept in a transactional table with the data), so nothing is skipped and nothing applied twice; what the
IO thread had received is fetched again. A connection that ran one side only gets that side back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ferry_control.drivers.base import ConnectionSettings, ParallelApplyChange, ParallelApplyLimits
from ferry_control.drivers.errors import DriverError, ErrorKind, ServerConflict
from ferry_control.drivers.mariadb.connection import quote_ident
from ferry_control.drivers.mariadb.errors import ReplicationNotConfigured
from ferry_control.drivers.mariadb.relay import MariadbRelayLog
from ferry_control.drivers.mariadb.rows import connection_settings

#: slave_parallel_mode's values, and the most slave_parallel_threads takes.
MODES = ("none", "minimal", "conservative", "optimistic", "aggressive")
THREADS_MAX = 16383
LIMITS = ParallelApplyLimits(
    modes=MODES,
    parallel_modes=("conservative", "optimistic", "aggressive"),
    catch_up_mode="optimistic",
    workers_min=0,
    workers_max=THREADS_MAX,
    domain_workers_min=0,
    server_wide_workers=True,
)
#: The server-wide part, as `rows.connection_settings` reads it.
POOL = (
    "SELECT @@slave_parallel_threads AS parallel_threads, @@slave_domain_parallel_threads AS domain_parallel_threads, "
    "@@gtid_ignore_duplicates AS ignore_duplicates, @@rpl_semi_sync_slave_enabled AS semi_sync_replica"
)


def _name(row: Mapping[str, Any]) -> str:
    return str(row.get("Connection_name") or "")


def _applying(row: Mapping[str, Any]) -> bool:
    return str(row.get("Slave_SQL_Running")) == "Yes"


def _receiving(row: Mapping[str, Any]) -> bool:
    """The IO thread runs or tries to (Slave_IO_Running Yes, or Connecting / Preparing)."""
    return str(row.get("Slave_IO_Running") or "No") != "No"


def _restart(row: Mapping[str, Any]) -> str:
    """How to start again what ran of the connection: both threads, or the one that ran."""
    if _applying(row) and _receiving(row):
        return "START SLAVE %s"
    return "START SLAVE %s SQL_THREAD" if _applying(row) else "START SLAVE %s IO_THREAD"


class MariadbParallelApply(MariadbRelayLog):
    """`set_parallel_apply` for a MariaDB server."""

    parallel_apply_limits: ClassVar[ParallelApplyLimits | None] = LIMITS

    async def set_parallel_apply(
        self, connection: str | None, mode: str, workers: int, domain_workers_max: int
    ) -> ParallelApplyChange:
        """Sets `connection`'s slave_parallel_mode and the server's slave_parallel_threads and
        slave_domain_parallel_threads (0: no per-domain limit), where they differ. A new worker count stops and
        starts again every connection that runs (MariaDB has one pool); a new mode, the connection only.
        `ParallelApplyChange.paused` names them. `connection` None: the pool only (the mode is left alone).
        Refused (409 `until_running`) when a connection that would be stopped runs with START SLAVE … UNTIL: its
        start again would lose the UNTIL."""
        why = LIMITS.refusal(mode, workers, domain_workers_max)
        if why is not None:
            raise DriverError(self.address, "bad_parallel_apply", why, kind=ErrorKind.bad_request)
        rows = await self.sql.query("SHOW ALL SLAVES STATUS")
        row = next((r for r in rows if _name(r) == connection), None)
        if row is None and connection is not None:
            raise ReplicationNotConfigured(self.address, 1617, f"There is no master connection '{connection}'")
        pool = (await self.sql.query(POOL))[0]
        before = connection_settings(row or {}, pool)
        wanted_pool = {"slave_parallel_threads": workers, "slave_domain_parallel_threads": domain_workers_max}
        have_pool = {
            "slave_parallel_threads": before.workers,
            "slave_domain_parallel_threads": before.domain_workers_max,
        }
        pool_changes = {k: v for k, v in wanted_pool.items() if have_pool[k] != v}
        mode_changes = row is not None and (before.parallel_mode or "") != mode
        if not pool_changes and not mode_changes:
            return ParallelApplyChange(before=before, after=before)
        concerned = rows if pool_changes else [row] if row is not None else []
        pausing = [r for r in concerned if _applying(r) or _receiving(r)]
        bounded = [_name(r) for r in pausing if str(r.get("Until_Condition") or "None") != "None"]
        if bounded:
            raise ServerConflict(
                self.address, "until_running",
                f"connection(s) {', '.join(repr(n) for n in bounded)} run with START SLAVE … UNTIL: changing "
                "parallel apply would start them again without it; let them reach it, or stop them first",
            )  # fmt: skip
        paused: list[Mapping[str, Any]] = []
        try:
            for r in pausing:
                await self.sql.query("STOP SLAVE %s", (_name(r),))
                paused.append(r)
            for variable, value in pool_changes.items():
                await self.sql.query(f"SET GLOBAL {variable} = %s", (int(value),))
            if mode_changes:
                prefix = f"{quote_ident(connection)}." if connection else ""
                await self.sql.query(f"SET GLOBAL {prefix}slave_parallel_mode = %s", (mode,))
        finally:
            await self._start_again(paused)
        if connection is not None:
            after = await self._settings_of(connection)
        else:
            after = connection_settings({}, (await self.sql.query(POOL))[0])
        return ParallelApplyChange(before=before, after=after, paused=tuple(_name(r) for r in paused))

    async def _start_again(self, stopped: list[Mapping[str, Any]]) -> None:
        """Starts again what ran of each stopped connection, every one tried; the first failure is raised after."""
        failed: list[tuple[str, DriverError]] = []
        for row in stopped:
            try:
                await self.sql.query(_restart(row), (_name(row),))
            except DriverError as e:
                failed.append((_name(row), e))
        if failed:
            name, error = failed[0]
            raise DriverError(
                self.address, "replication_not_restarted",
                f"connection(s) {', '.join(repr(n) for n, _ in failed)} could not be started again after the "
                f"parallel apply change ({error}): start them (START SLAVE '{name}')",
                kind=error.kind,
            ) from error  # fmt: skip

    async def _settings_of(self, connection: str) -> ConnectionSettings:
        (row,) = await self.sql.query("SHOW SLAVE %s STATUS", (connection,))
        return connection_settings(row, (await self.sql.query(POOL))[0])
