"""The relay log of a stopped replica connection: which transactions it has received and not applied, from its SQL
thread's position on, and the transaction holding the event an SQL error names (`failing_event`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping

from ferry_control.core.gtid import Gtid
from ferry_control.drivers.errors import ServerConflict
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.errors import MariadbError
from ferry_control.drivers.mariadb.rows import EVENTS_PAGE_ROWS, GTID_INFO

#: Relay log files read, at most, to find the transactions a stopped connection has yet to apply.
RELAY_FILES_MAX = 8
#: Where a SQL error says the failing event was: `the event's master log binlog.000001, end_log_pos 652`.
FAILING_EVENT = re.compile(r"the event's master log ([^,\s]+), end_log_pos (\d+)")


def failing_event(error: str) -> tuple[str, int] | None:
    """The master binlog file and end position of the event a SQL error names, if it names one."""
    match = FAILING_EVENT.search(error)
    return (match.group(1), int(match.group(2))) if match else None


def _next_file(name: str) -> str:
    """The relay (or binlog) file after `name`: `relay-bin.000007` → `relay-bin.000008`."""
    stem, _, number = name.rpartition(".")
    return f"{stem}.{int(number) + 1:0{len(number)}d}"


class MariadbRelayLog(MariadbServer):
    """Reading a connection's relay log (SHOW RELAYLOG … EVENTS)."""

    async def _relay_gtids(
        self, connection: str, row: Mapping[str, object], applied: Mapping[int, Gtid], count: int
    ) -> list[Gtid]:
        """The first `count` GTIDs the SQL thread has yet to apply, from its relay log position on (following the
        relay log into its next files), leaving out any it already has. When the SQL error names the event that
        failed (`the event's master log F, end_log_pos P`), the GTIDs start at the transaction holding that event —
        with parallel apply the relay position is the oldest transaction not committed, which may be another
        domain's, waiting (on a lock, say) when the error stopped everything — and a failing event not found there
        is a refusal (`failing_event_not_found`), never a guess."""
        failed_at = failing_event(str(row.get("Last_SQL_Error") or ""))
        pending: list[Gtid] = []  # unapplied, in relay order, from the relay position
        master_file: str | None = None
        anchor: int | None = None  # index in `pending` of the failing transaction, once found
        current: Gtid | None = None
        async for event in self._relay_events(connection, row):
            kind, info = str(event.get("Event_type")), str(event.get("Info") or "")
            match = GTID_INFO.match(info) if kind == "Gtid" else None
            if kind == "Rotate":
                master_file = info.split(";", 1)[0] or master_file
            elif match is not None:
                gtid = Gtid(int(match.group(1)), int(match.group(2)), int(match.group(3)))
                have = applied.get(gtid.domain)
                current = gtid if have is None or gtid.seq > have.seq else None
                if current is not None:
                    pending.append(current)
            elif (
                failed_at is not None and anchor is None and current is not None
                and str(event.get("End_log_pos")) == str(failed_at[1]) and master_file in (None, failed_at[0])
            ):  # fmt: skip
                anchor = len(pending) - 1
            if (failed_at is None or anchor is not None) and len(pending) - (anchor or 0) >= count:
                break
        if failed_at is not None and anchor is None:
            raise ServerConflict(
                self.address, "failing_event_not_found",
                f"the event the SQL error names ({failed_at[0]}, end_log_pos {failed_at[1]}) is not in connection "
                f"'{connection}''s relay log from its SQL position: nothing was skipped",
            )  # fmt: skip
        return pending[anchor or 0 :][:count]

    async def _relay_events(self, connection: str, row: Mapping[str, object]) -> AsyncIterator[Mapping[str, object]]:
        """The connection's relay log events from its SQL thread's position on, into the next files (at most
        RELAY_FILES_MAX), until the end of what was received."""
        file, pos = str(row.get("Relay_Log_File") or ""), int(str(row.get("Relay_Log_Pos") or 4))
        for _ in range(RELAY_FILES_MAX):
            # Paged by an offset from `pos` (a relay log event's End_log_pos is its master's binlog position).
            offset = 0
            while True:
                try:
                    events = await self.sql.query(
                        "SHOW RELAYLOG %s EVENTS IN %s FROM %s LIMIT %s, %s",
                        (connection, file, pos, offset, EVENTS_PAGE_ROWS),
                    )
                except MariadbError as e:
                    if e.errno == 1220:  # no such relay file: the end of what was received
                        return
                    raise
                for event in events:
                    yield event
                if len(events) < EVENTS_PAGE_ROWS:
                    break
                offset += len(events)
            file, pos = _next_file(file), 4
