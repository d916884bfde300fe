"""A MariaDB server's recent binlog transactions (SHOW BINLOG EVENTS, newest first, paged by a cursor), with the
scans of its newest files kept per server so later calls read only what is new.

What is read is bounded by what is listed, not by the binlog's size (a binlog file may hold millions of events:
max_binlog_size is up to 1 GiB): a file's first scan starts `events_tail_bytes` before its end, at an event boundary
the server finds by skipping events itself (SHOW BINLOG EVENTS … LIMIT n, 1 returns one row), and a listing that
needs older transactions reads them in windows going back from the oldest it has, each window four times the last.
What is kept is bounded too: each file's scan keeps at most `events_kept_max` transactions, its newest, and the scans
kept together at most that many; every call reads at most `events_scan_max` events.

A GTID range far back is found without reading the binlog after it (`events_cursor_after`): the file holding a
transaction is the newest whose Gtid_list event (the GTID state at its start) is below it, and in that file the
offsets are halved, each probe an event boundary where the server's BINLOG_GTID_POS says which half holds it."""

from __future__ import annotations

from ferry_control.core.gtid import GtidParseError, by_domain, position
from ferry_control.drivers.base import BinlogTransaction, EventsPage
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.mariadb.config import MariadbServer
from ferry_control.drivers.mariadb.errors import MariadbError
from ferry_control.drivers.mariadb.rows import EVENTS_PAGE_ROWS, BinlogFileScan, cursor, cursor_parts, file_number

#: Binlog files whose scans are kept per server (the newest ones: recent events are read from the end).
SCANNED_FILES_KEPT = 4
#: Bound on the probes one search for an event boundary makes (each narrows the estimate of the event sizes).
BOUNDARY_PROBES_MAX = 12
#: A boundary found this close before the wanted offset is close enough (the bytes between are read anyway).
BOUNDARY_SLACK_BYTES = 32 * 1024
#: The events of a file's start whose sizes give the first estimate of an event's size (corrected by every probe).
BOUNDARY_SAMPLE_EVENTS = 100
#: A probe aims at this share of the distance to the target: short of it, so the next probe starts close.
BOUNDARY_AIM = 0.95
#: A seek for a transaction stops halving its file once the part left is this small (read back from there).
SEEK_SLACK_BYTES = 64 * 1024
#: Events read at a binlog file's start to find its Gtid_list (after the format description, a start encryption
#: event at most).
START_STATE_EVENTS = 4


class MariadbBinlogEvents(MariadbServer):
    """Recent binlog events, and the kept scans."""

    async def recent_events(self, limit: int, domain: int | None = None, before: int | None = None) -> EventsPage:
        """The newest transactions (GTID events with their commit ids and tables) before the cursor `before` (a
        binlog file number and offset in one integer), newest first, read with SHOW BINLOG EVENTS page by page from
        the newest files back. Scans of each file are kept for the server, so later calls read only what is new."""
        if limit <= 0:
            return EventsPage((), None)
        async with self.sql.heavy_read():
            return await self._recent_events(limit, domain, before)

    async def _recent_events(self, limit: int, domain: int | None, before: int | None) -> EventsPage:
        listing = await self.sql.query("SHOW BINARY LOGS")
        files = [str(f["Log_name"]) for f in listing]
        sizes = {str(f["Log_name"]): int(f.get("File_size") or 0) for f in listing}
        end_file, end_offset = cursor_parts(before) if before is not None else (None, None)
        budget = [self.config.events_scan_max]
        found: list[BinlogTransaction] = []
        try:
            for file in reversed(files):
                number = file_number(file)
                if end_file is not None and number > end_file:
                    continue
                scan = await self._scan(file, sizes.get(file, 0), budget)
                for tx in reversed(scan.transactions):
                    if end_file is not None and number == end_file and (tx.offset or 0) >= (end_offset or 0):
                        continue
                    if domain is not None and tx.domain != domain:
                        continue
                    found.append(tx)
                    if len(found) == limit:
                        break
                if len(found) < limit and (scan.dropped or scan.start_pos > 4):
                    # The file's transactions older than its kept ones are wanted too: read back from the oldest
                    # kept, keeping only as many as are still wanted.
                    until = (scan.transactions[0].offset or 0) if scan.transactions else scan.start_pos
                    if end_file is not None and number == end_file:
                        until = min(until, end_offset or 0)
                    found.extend(reversed(await self._older(file, until, limit - len(found), domain, budget)))
                if len(found) == limit:
                    break
        finally:  # also when a scan stopped at its bound or failed: what is kept stays bounded
            self._forget_old_scans(files)
        next_before = None
        if len(found) == limit:
            oldest = found[-1]
            next_before = cursor(oldest.file or "", oldest.offset or 0)
        return EventsPage(tuple(found), next_before)

    async def events_cursor_after(self, domain: int, seq_no: int) -> int | None:
        """A cursor just past `domain`-…-`seq_no` in the binlog (at most SEEK_SLACK_BYTES past it): its file is the
        newest whose Gtid_list is below it in the domain, and that file's offsets are halved (the GTID state at each
        probe, BINLOG_GTID_POS, says which half) until what is left is small. None when no file's start says (the
        reader starts at the newest end), or when the binlog no longer holds it (older than its oldest file)."""
        async with self.sql.heavy_read():
            listing = await self.sql.query("SHOW BINARY LOGS")
            chosen: tuple[str, int] | None = None
            for row in reversed(listing):
                file, size = str(row["Log_name"]), int(row.get("File_size") or 0)
                start = await self._start_state(file)
                if start is None:
                    return None
                if start.get(domain, 0) < seq_no:
                    chosen = (file, size)
                    break
            if chosen is None:
                return None
            file, size = chosen
            low, high = 4, size
            while high - low > SEEK_SLACK_BYTES:
                probe = await self._boundary(file, (low + high) // 2, start=low)
                if probe <= low:
                    break
                state = await self._state_at(file, probe)
                if state is None:
                    break  # the server cannot say there: read back from the upper bound
                if state.get(domain, 0) >= seq_no:
                    high = probe  # it is before the probe
                else:
                    low = probe
            return cursor(file, high)

    async def _start_state(self, file: str) -> dict[int, int] | None:
        """The GTID state at `file`'s start (its Gtid_list event: the last seq_no of each domain before it), or None
        when the file's first events hold none."""
        rows = await self.sql.query("SHOW BINLOG EVENTS IN %s LIMIT %s", (file, START_STATE_EVENTS))
        for row in rows:
            if str(row.get("Event_type") or "") != "Gtid_list":
                continue
            return _seqs(str(row.get("Info") or "").strip().strip("[]"))
        return None

    async def _state_at(self, file: str, offset: int) -> dict[int, int] | None:
        """The GTID state at an event boundary of `file` (the last seq_no of each domain before it): the server's
        BINLOG_GTID_POS, which reads the file up to there itself; None when it cannot say."""
        rows = await self.sql.query("SELECT BINLOG_GTID_POS(%s, %s) AS pos", (file, offset))
        text = rows[0].get("pos") if rows else None
        return None if text is None else _seqs(str(text))

    async def _scan(self, file: str, size: int, budget: list[int]) -> BinlogFileScan:
        """The file's scan brought up to its end, continuing a kept one when its last transaction is still where it
        was (a RESET MASTER reuses file names); a new one starts `events_tail_bytes` before the end (`size`)."""
        scans: dict[str, BinlogFileScan] = self.sql.binlog_scans
        scan = scans.get(file)
        if scan is not None and scan.transactions:
            last = scan.transactions[-1]
            rows = await self.sql.query("SHOW BINLOG EVENTS IN %s FROM %s LIMIT 1", (file, last.offset))
            if not rows or f"GTID {last.gtid}" not in str(rows[0].get("Info") or ""):
                scan = None
        if scan is None:
            start = await self._boundary(file, size - self.config.events_tail_bytes)
            scan = BinlogFileScan(file, next_pos=start, start_pos=start, kept_max=self.config.events_kept_max)
        while True:
            if budget[0] <= 0:
                scans[file] = scan
                raise DriverError(
                    self.address, "events_scan_limit",
                    f"read {self.config.events_scan_max} binlog events without reaching the end of {file}; "
                    "the next call goes on from there",
                )  # fmt: skip
            page = min(EVENTS_PAGE_ROWS, budget[0])
            try:
                rows = await self.sql.query("SHOW BINLOG EVENTS IN %s FROM %s LIMIT %s", (file, scan.next_pos, page))
            except MariadbError as e:
                if e.errno == 1220 and scan.next_pos > 4:  # the kept position is no event boundary any more
                    scan = BinlogFileScan(file, kept_max=self.config.events_kept_max)
                    continue
                raise
            budget[0] -= len(rows)
            scan.feed(rows)
            if len(rows) < page:
                break
        scans[file] = scan
        return scan

    async def _older(
        self, file: str, until: int, wanted: int, domain: int | None, budget: list[int]
    ) -> list[BinlogTransaction]:
        """The newest `wanted` transactions (of `domain`, when given) of `file` that start before offset `until`,
        oldest first, read in windows going back from `until` (each four times the last, from an event boundary
        found by _boundary) and never kept: at most what is wanted, and one window, are held at once."""
        found: list[BinlogTransaction] = []
        end = until
        back = max(self.config.events_tail_bytes, 1)
        while len(found) < wanted and end > 4:
            start = await self._boundary(file, end - back)
            window = BinlogFileScan(file, next_pos=start, start_pos=start, domain=domain)
            while window.next_pos < end:
                if budget[0] <= 0:
                    raise DriverError(
                        self.address, "events_scan_limit",
                        f"read {self.config.events_scan_max} binlog events without reaching offset {end} of {file} "
                        "going back: list fewer or newer transactions",
                    )  # fmt: skip
                page = min(EVENTS_PAGE_ROWS, budget[0])
                rows = await self.sql.query("SHOW BINLOG EVENTS IN %s FROM %s LIMIT %s", (file, window.next_pos, page))
                budget[0] -= len(rows)
                before = [row for row in rows if int(row.get("Pos") or 0) < end]
                window.feed(before)
                if len(rows) < page or len(before) < len(rows):
                    break
            found = window.transactions + found
            end = start
            back *= 4
        return found[-wanted:] if wanted > 0 else []

    async def _boundary(self, file: str, target: int, start: int = 4) -> int:
        """The offset of an event of `file` at or before `target` and at most BOUNDARY_SLACK_BYTES before it (`start`,
        a known event boundary, for a target there or before), found without reading the events between: the server
        skips `n` events from a known boundary and returns the next one's offset (SHOW BINLOG EVENTS IN f FROM p
        LIMIT n, 1), `n` estimated from the size of the file's first events and aimed short of the target (a probe
        past it makes the server read on to the file's end); at most BOUNDARY_PROBES_MAX probes, then the best found
        (the caller reads from there: more bytes, the same transactions)."""
        known = start
        if target - known <= BOUNDARY_SLACK_BYTES:
            return known
        sample = await self.sql.query("SHOW BINLOG EVENTS IN %s FROM 4 LIMIT %s", (file, BOUNDARY_SAMPLE_EVENTS))
        for row in sample:
            if int(row.get("Pos") or 0) <= target:
                known = max(known, int(row.get("Pos") or 0))
        if len(sample) < BOUNDARY_SAMPLE_EVENTS or target - known <= BOUNDARY_SLACK_BYTES:
            return known
        event_bytes = max(1.0, (int(sample[-1].get("End_log_pos") or 0) - 4) / len(sample))
        for _ in range(BOUNDARY_PROBES_MAX):
            skip = max(1, int(BOUNDARY_AIM * (target - known) / event_bytes))
            rows = await self.sql.query("SHOW BINLOG EVENTS IN %s FROM %s LIMIT %s, 1", (file, known, skip))
            offset = int(rows[0].get("Pos") or 0) if rows else None
            if offset is None or offset > target:
                # Past the end or past the target: the events are larger than guessed.
                event_bytes *= 1.5 if offset is None else max(1.1, (offset - known) / (target - known))
                continue
            event_bytes = max(1.0, (offset - known) / skip)
            known = offset
            if target - known <= BOUNDARY_SLACK_BYTES:
                break
        return known

    def _forget_old_scans(self, files: list[str]) -> None:
        """Keeps the scans of the newest SCANNED_FILES_KEPT files, and of those only as many, newest first, as hold
        at most events_kept_max transactions together (the newest file's always: it holds at most that many)."""
        scans: dict[str, BinlogFileScan] = self.sql.binlog_scans
        kept = 0
        for rank, file in enumerate(sorted(scans, key=file_number, reverse=True)):
            kept += len(scans[file].transactions)
            if file not in files or rank >= SCANNED_FILES_KEPT or (rank > 0 and kept > self.config.events_kept_max):
                del scans[file]


def _seqs(text: str) -> dict[int, int] | None:
    """A GTID state the server wrote (`1-1-620,2-2-620`, empty for none) → the seq_no of each domain; None when it
    is no GTID state (a seek must then not trust it)."""
    try:
        return {d: g.seq for d, g in by_domain(position(text)).items()}
    except GtidParseError:
        return None
