"""A MariaDB server's read-only flag, where its client writes stopped once it is on, and the client sessions that
could write despite it (users with SUPER or READ ONLY ADMIN, directly or through roles), which a switchover ends.

Where writes stopped is known without waiting: `SET GLOBAL read_only=1` (10.11 `fix_read_only`) takes the global read
lock and then blocks commits — waiting for every commit in progress, each of which holds the backup-commit metadata
lock through its binlog write — before it sets the flag, and a commit checks the flag only once it holds that lock.
So when the statement has returned, every client commit has landed in the binlog or will be refused, and the binlog
position read then is final (`backend/tests/operations/test_mariadb_operations.py` relies on it: switchovers under
eight concurrent writers lose nothing)."""

from __future__ import annotations

import logging
import re
import time

from ferry_control.drivers.base import WritesStopped
from ferry_control.drivers.errors import ServerConflict
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.errors import MariadbError

log = logging.getLogger(__name__)

#: Processlist commands of replication and server threads, never killed.
SERVER_THREAD_COMMANDS = frozenset(
    {"Binlog Dump", "Slave_IO", "Slave_SQL", "Slave_worker", "Daemon", "Connect", "Killed"}
)
#: Users the server runs its own threads as.
SERVER_THREAD_USERS = frozenset({"system user", "event_scheduler", "unauthenticated user"})
#: How long the users `prepare_read_only` read count for the next `kill_sessions_bypassing_read_only`.
BYPASSING_FRESH_S = 30.0
#: A global grant that lets a session write despite read_only.
BYPASSING_GRANT = re.compile(r"\bSUPER\b|\bREAD_ONLY ADMIN\b|\bALL PRIVILEGES\b")


def _grantee_user(grantee: str) -> str:
    """`'user'@'host'` → user."""
    user = grantee.rsplit("@", 1)[0]
    return user[1:-1].replace("''", "'") if user.startswith("'") and user.endswith("'") else user


class MariadbReadOnly(MariadbServer):
    """read_only on and off, and ending the sessions that bypass it."""

    #: When and which users `prepare_read_only` read (None: not read, or used already).
    _bypassing_read: tuple[float, set[str]] | None = None

    async def set_read_only(self, read_only: bool, *, confirm: bool = True) -> bool:
        await self.sql.query("SET GLOBAL read_only = %s", (1 if read_only else 0,))
        if not confirm:
            return read_only
        return bool(int(await self.sql.value("SELECT @@read_only")))

    #: `SET GLOBAL read_only=1` returns only once every commit in progress has landed (see the module's doc).
    counts_commits_in_flight = True

    async def wait_commits_landed(self, timeout_s: float) -> WritesStopped:
        """Where client writes stopped: the binlog position now, read-only being on (the commits in progress were
        waited for by the statement that turned it on; nothing is counted, so `in_flight_at_read_only` is None).
        ServerConflict when read-only is off (turned off since: nothing stopped)."""
        started = time.perf_counter()
        rows = await self.sql.query("SELECT @@read_only AS read_only, @@gtid_binlog_pos AS position")
        if not rows or not int(rows[0]["read_only"]):
            raise ServerConflict(
                self.address, "read_only_off", "read_only is off: client writes did not stop (it was turned off since)"
            )
        return WritesStopped(
            position=str(rows[0]["position"] or ""), in_flight_at_read_only=None, waited_s=time.perf_counter() - started
        )

    async def prepare_read_only(self) -> None:
        """Reads which users can write despite read_only, for the next `kill_sessions_bypassing_read_only` (within
        `BYPASSING_FRESH_S`): inside a move's window only their sessions are then looked for."""
        self._bypassing_read = (time.monotonic(), await self._bypassing_users())

    async def _bypassing_users(self) -> set[str]:
        grantees = await self.sql.query(
            "SELECT DISTINCT GRANTEE FROM information_schema.USER_PRIVILEGES "
            "WHERE PRIVILEGE_TYPE IN ('SUPER', 'READ_ONLY ADMIN')"
        )
        return ({_grantee_user(str(g["GRANTEE"])) for g in grantees} | await self._users_with_bypassing_roles()) - {
            self.config.admin.user
        }

    async def kill_sessions_bypassing_read_only(self) -> int:
        """Kills the client sessions of users whose privileges let them write despite read_only (SUPER or READ ONLY
        ADMIN, granted directly or through a role, however nested: a user may SET ROLE at any time), sparing
        replication and server threads and Ferry's own user. Returns how many were killed. Users are matched by
        name (a grant to `u`@`h` covers every session of `u`); who they are is what `prepare_read_only` read, when
        it did so within `BYPASSING_FRESH_S` (once), else read now."""
        read, self._bypassing_read = self._bypassing_read, None
        if read is not None and time.monotonic() - read[0] <= BYPASSING_FRESH_S:
            users = read[1]
        else:
            users = await self._bypassing_users()
        if not users:
            return 0
        sessions = await self.sql.query(
            "SELECT ID, USER, COMMAND FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID()"
        )
        killed = 0
        for session in sessions:
            user, command = str(session["USER"]), str(session["COMMAND"])
            if user not in users or user in SERVER_THREAD_USERS or command in SERVER_THREAD_COMMANDS:
                continue
            try:
                await self.sql.query(f"KILL CONNECTION {int(session['ID'])}")
            except MariadbError as e:
                if e.errno != 1094:  # unknown thread: it ended meanwhile
                    raise
                continue
            killed += 1
        return killed

    async def _users_with_bypassing_roles(self) -> set[str]:
        """Users granted, directly or through other roles, a role that holds SUPER or READ ONLY ADMIN globally (the
        role grants in mysql.roles_mapping, each role's own grants by SHOW GRANTS)."""
        try:
            rows = await self.sql.query("SELECT User, Host, Role FROM mysql.roles_mapping")
        except MariadbError as e:
            if e.errno not in (1142, 1044, 1227):  # not "access denied"
                raise
            log.warning("%s: Ferry's user cannot read the role grants (%s): sessions whose SUPER or READ ONLY "
                        "ADMIN comes through a role are not ended", self.address, e.message)  # fmt: skip
            return set()
        mapping = [(str(r["User"]), str(r["Host"]), str(r["Role"])) for r in rows]
        roles = {role for _, _, role in mapping}
        bypassing = set()
        for role in roles:
            grants = [str(next(iter(row.values()))) for row in await self.sql.query("SHOW GRANTS FOR %s", (role,))]
            if any(" ON *.* " in g and BYPASSING_GRANT.search(g) for g in grants):
                bypassing.add(role)
        # A role granted a bypassing role bypasses too; then every user granted any of them.
        changed = True
        while changed:
            changed = False
            for grantee, host, role in mapping:
                if host == "" and grantee in roles and role in bypassing and grantee not in bypassing:
                    bypassing.add(grantee)
                    changed = True
        return {grantee for grantee, host, role in mapping if host != "" and role in bypassing}
