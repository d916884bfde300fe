"""When each master was first seen at each position, per domain: the collector's own clock for lag in seconds.

A replica at seq_no r in domain d lags by `now − t`, where t is when the collector first saw its master past r in
d (the oldest transaction the replica misses was committed about then). No write to any server is needed, and the
figure is the same for every kind of server. Its resolution is the poll interval: a transaction is seen at the
first poll after its commit. Each master keeps at most `entries_max` steps per domain (the oldest dropped first);
a replica further behind than the oldest kept step lags by at least that step's age, which is what is reported.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

#: Steps kept per master and domain: at a poll a second, an hour of history.
ENTRIES_MAX = 3600


@dataclass
class DomainTimeline:
    """Increasing seq_nos of one master in one domain, with when each was first seen."""

    seqs: list[int] = field(default_factory=list)
    seen_at: list[datetime] = field(default_factory=list)

    def observe(self, seq: int, at: datetime, entries_max: int) -> None:
        if self.seqs and seq <= self.seqs[-1]:
            return  # not newer (a master's position only moves forward; a lower one is a new history)
        self.seqs.append(seq)
        self.seen_at.append(at)
        if len(self.seqs) > entries_max:
            del self.seqs[: len(self.seqs) - entries_max]
            del self.seen_at[: len(self.seen_at) - entries_max]

    def first_seen_past(self, seq: int) -> datetime | None:
        """When the master was first seen with a seq_no above `seq`; None when it never was."""
        index = bisect.bisect_right(self.seqs, seq)
        return self.seen_at[index] if index < len(self.seqs) else None


class MasterTimelines:
    """Per server and domain, the steps of its binlog position as the collector saw them."""

    def __init__(self, entries_max: int = ENTRIES_MAX):
        self._entries_max = entries_max
        self._by_server: dict[int, dict[int, DomainTimeline]] = {}

    def observe(self, server_id: int, gtids: Iterable[tuple[int, int]], at: datetime) -> None:
        """`gtids`: (domain, seq_no) of the server's gtid_binlog_pos at a successful poll at `at`."""
        domains = self._by_server.setdefault(server_id, {})
        for domain, seq in gtids:
            timeline = domains.get(domain)
            if timeline is None or (timeline.seqs and seq < timeline.seqs[-1]):
                timeline = domains[domain] = DomainTimeline()  # first sight, or a reset binlog: start again
            timeline.observe(seq, at, self._entries_max)

    def lag_seconds(self, master_id: int, domain: int, replica_seq: int, now: datetime) -> float | None:
        """Seconds the replica at `replica_seq` lags in `domain` behind that master: 0.0 when the master was never
        seen past it; None when the master's domain was never observed."""
        timeline = self._by_server.get(master_id, {}).get(domain)
        if timeline is None or not timeline.seqs:
            return None
        past = timeline.first_seen_past(replica_seq)
        if past is None:
            return 0.0
        return max((now - past).total_seconds(), 0.0)

    def forget(self, keep: Iterable[int]) -> None:
        """Drops the servers not in `keep` (deleted since)."""
        kept = set(keep)
        for server_id in [s for s in self._by_server if s not in kept]:
            del self._by_server[server_id]
