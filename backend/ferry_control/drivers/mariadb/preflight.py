"""The checks a MariaDB server must pass to become a master others follow by GTID: its binlog settings, Ferry's
privileges for the moves, and the replication login."""

from __future__ import annotations

from ferry_control.drivers.base import Check
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.connection import MariadbConnections, PoolSettings

#: Global privileges the switchover's and failover's moves need of Ferry's user on a server that becomes master
#: (read positions and replicas, read-only off and on, CHANGE MASTER / START / STOP / RESET SLAVE, KILL sessions that
#: bypass read-only, FLUSH NO_WRITE_TO_BINLOG). ALL PRIVILEGES covers them; SUPER does not cover them all on 10.11+.
MOVE_PRIVILEGES = (
    "BINLOG MONITOR", "SLAVE MONITOR", "READ_ONLY ADMIN", "REPLICATION SLAVE ADMIN", "CONNECTION ADMIN", "RELOAD",
)  # fmt: skip


def _flag_check(name: str, value: object, why: str) -> Check:
    on = str(value).upper() in ("1", "ON")
    return Check(name, on, f"{name}={'ON' if on else 'OFF'}" + ("" if on else f" (must be ON: {why})"))


def _global_privileges(grants: list[str]) -> set[str]:
    """The privileges `GRANT … ON *.* TO …` lines give (upper case, as SHOW GRANTS spells them)."""
    held: set[str] = set()
    for grant in grants:
        if not grant.startswith("GRANT ") or " ON *.* TO " not in grant:
            continue
        held |= {p.strip().upper() for p in grant[len("GRANT ") : grant.index(" ON *.* TO ")].split(",")}
    return held


class MariadbPreflight(MariadbServer):
    """A candidate master's checks, in MariaDB's terms."""

    async def replication_checks(self) -> list[Check]:
        """What this server needs to become a master others follow by GTID: log_bin, log_slave_updates (what it
        replicated is in its binlog), gtid_strict_mode, binlog_format=ROW, Ferry's privileges for the moves
        (MOVE_PRIVILEGES), and the replication login: the user exists here and logs in with the stored password
        and holds REPLICATION SLAVE (replicas will connect to this server with it)."""
        v = (
            await self.sql.query(
                "SELECT @@log_bin AS log_bin, @@log_slave_updates AS log_slave_updates, "
                "@@gtid_strict_mode AS gtid_strict_mode, @@binlog_format AS binlog_format"
            )
        )[0]
        checks = [
            _flag_check("log_bin", v["log_bin"], "its binlog is what replicas read"),
            _flag_check("log_slave_updates", v["log_slave_updates"], "what it replicated is in its binlog"),
            _flag_check("gtid_strict_mode", v["gtid_strict_mode"], "out-of-order GTIDs are refused, not applied"),
        ]
        fmt = str(v["binlog_format"])
        checks.append(Check("binlog_format", fmt == "ROW", f"binlog_format={fmt}" + ("" if fmt == "ROW" else
                                                                                     " (ROW needed)")))  # fmt: skip
        grants = [str(next(iter(r.values()))) for r in await self.sql.query("SHOW GRANTS FOR CURRENT_USER()")]
        held = _global_privileges(grants)
        missing = [p for p in MOVE_PRIVILEGES if "ALL PRIVILEGES" not in held and p not in held]
        checks.append(
            Check(
                "ferry_privileges",
                not missing,
                f"{self.config.admin.user} holds {', '.join(MOVE_PRIVILEGES)}"
                if not missing
                else f"{self.config.admin.user} lacks {', '.join(missing)} (needed to move the master)",
            )
        )
        checks += await self._replication_login_checks()
        return checks

    async def _replication_login_checks(self) -> list[Check]:
        login = self.config.replication
        if login is None:
            return [Check("replication_user_present", False, "no replication user is stored for the cluster")]
        present = int(
            await self.sql.value("SELECT COUNT(*) FROM mysql.global_priv WHERE User = %s", (login.user,)) or 0
        )
        checks = [
            Check(
                "replication_user_present",
                present > 0,
                f"user {login.user!r} exists" if present else f"no user {login.user!r} on this server",
            )
        ]
        settings = self.sql.settings
        probe = MariadbConnections(
            self.address,
            PoolSettings(
                host=settings.host, port=settings.port, user=login.user, password=login.password,
                tls_ca_file=settings.tls_ca_file, tls_ca=settings.tls_ca,
                connect_timeout_s=settings.connect_timeout_s, statement_timeout_s=settings.statement_timeout_s,
                connections_max=1,
            ),
        )  # fmt: skip
        try:
            grants = [str(next(iter(r.values()))) for r in await probe.query("SHOW GRANTS FOR CURRENT_USER()")]
        except DriverError as e:
            checks.append(Check("replication_login", False, f"{login.user!r} cannot log in: {e.code}: {e.message}"))
            return checks
        finally:
            await probe.aclose()
        held = _global_privileges(grants)
        ok = "REPLICATION SLAVE" in held or "ALL PRIVILEGES" in held
        checks.append(
            Check(
                "replication_login",
                ok,
                f"{login.user!r} logs in and holds REPLICATION SLAVE"
                if ok
                else f"{login.user!r} logs in but lacks REPLICATION SLAVE",
            )
        )
        return checks
