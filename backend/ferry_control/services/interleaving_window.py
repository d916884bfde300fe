"""The window an interleavings read covers, without I/O: the newest N transactions of each server (by count), the
last N seconds of writes (by time: per domain, the GTIDs after what the cluster had reached N seconds ago, from the
positions the collector recorded), or a GTID range per domain (`from` and `to` positions, both inclusive). It says
which transactions fall in the window, when a server's read back through its binlog has gone far enough, and how many
transactions each server is behind the window's newest end in each domain (by seq_no, from positions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from ferry_control.core.errors import Unprocessable
from ferry_control.core.gtid import GtidParseError, by_domain, position

WindowKind = Literal["count", "time", "gtid"]
#: What `Window.left` says for a domain without a start: read as many as the bound allows.
READ_UNBOUNDED = 1_000_000


@dataclass(frozen=True)
class Window:
    kind: WindowKind
    #: The window's oldest seq_no per domain (inclusive); a domain not listed starts at its first transaction.
    from_seq: Mapping[int, int] = field(default_factory=dict)
    #: The window's newest seq_no per domain (inclusive), for a GTID range; None: up to the newest.
    to_seq: Mapping[int, int] | None = None
    #: Only these domains (a GTID range names its domains; None: every domain).
    domains: frozenset[int] | None = None
    last_s: int | None = None

    def holds(self, domain: int, seq_no: int) -> bool:
        if self.kind == "count":
            return True
        if self.domains is not None and domain not in self.domains:
            return False
        if seq_no < self.from_seq.get(domain, 0):
            return False
        return self.to_seq is None or domain not in self.to_seq or seq_no <= self.to_seq[domain]

    def read_far_enough(self, oldest_seen: Mapping[int, int], needed: Iterable[int]) -> bool:
        """A read going back through a binlog (newest first) has every transaction of the window once, in each
        `needed` domain, it has seen one at or below the window's start there (a binlog holds a domain in seq_no
        order). A domain without a start is read to the end, or to the read's bound."""
        for domain in needed:
            start = self.from_seq.get(domain)
            seen = oldest_seen.get(domain)
            if start is None or seen is None or seen > start:
                return False
        return True

    def needed(self, reached: Mapping[int, int]) -> set[int]:
        """The domains a server that has reached `reached` (seq_no per domain) holds transactions of in the window:
        one it has not reached the window's start in (or holds nothing of) has none to read."""
        domains = self.domains if self.domains is not None else set(reached) | set(self.from_seq)
        return {d for d in domains if reached.get(d, 0) >= self.from_seq.get(d, 0) and d in reached}

    def left(self, seen: Mapping[int, int], domain: int | None = None) -> int:
        """How many transactions the window still holds below `seen` (per domain, the oldest seq_no read so far, or
        what the server has reached before any read) by seq_no, in the domains it has a start in (one without a
        start is counted as READ_UNBOUNDED)."""
        domains = [domain] if domain is not None else self.needed(seen)
        total = 0
        for d in domains:
            start = self.from_seq.get(d)
            if start is None:
                return READ_UNBOUNDED
            total += max(0, seen.get(d, 0) - start + 1)
        return total

    def newest(self, reached_by_server: Iterable[Mapping[int, int]]) -> dict[int, int]:
        """The window's newest end per domain: the most any server has reached, at most `to`."""
        newest: dict[int, int] = {}
        for reached in reached_by_server:
            for domain, seq_no in reached.items():
                if self.domains is not None and domain not in self.domains:
                    continue
                if self.to_seq is not None and domain in self.to_seq:
                    seq_no = min(seq_no, self.to_seq[domain])
                newest[domain] = max(newest.get(domain, 0), seq_no)
        return newest


def behind(newest: Mapping[int, int], reached: Mapping[int, int], never: Iterable[int]) -> dict[int, int]:
    """Per domain, how many transactions (seq_nos) a server that has reached `reached` lacks of the window's newest
    end; domains it will never receive (`never`) are not counted: it is not behind in them, it is not downstream."""
    skip = set(never)
    return {
        domain: seq_no - reached.get(domain, 0)
        for domain, seq_no in sorted(newest.items())
        if domain not in skip and seq_no > reached.get(domain, 0)
    }


def _seqs(name: str, text: str) -> dict[int, int]:
    try:
        return {domain: gtid.seq for domain, gtid in by_domain(position(text)).items()}
    except GtidParseError as e:
        raise Unprocessable(f"{name}: {e}", code="bad_gtid") from e


def gtid_window(from_text: str | None, to_text: str | None) -> Window:
    """A GTID range per domain from `from` and `to` positions (`1-1-100,2-2-40`); either may be left out (from a
    domain's first transaction, or up to its newest), a domain named in one only is bounded on that side alone.
    422 bad_gtid for malformed text (naming the column), bad_range for a domain whose `from` is after its `to`."""
    from_seq = _seqs("from", from_text) if from_text else {}
    to_seq = _seqs("to", to_text) if to_text else None
    if not from_seq and not to_seq:
        raise Unprocessable("from/to: name at least one GTID (domain-server-seq)", code="bad_range")
    for domain, start in from_seq.items():
        if to_seq is not None and domain in to_seq and start > to_seq[domain]:
            raise Unprocessable(
                f"domain {domain}: from seq_no {start} is after to seq_no {to_seq[domain]}", code="bad_range"
            )
    return Window("gtid", from_seq=from_seq, to_seq=to_seq, domains=frozenset(from_seq) | frozenset(to_seq or {}))


def time_window(last_s: int, reach_then: Mapping[int, int]) -> Window:
    """The last `last_s` seconds: per domain, the GTIDs after `reach_then`, the most any of the cluster's servers had
    reached `last_s` seconds ago (a domain with no recorded position then starts at its first transaction)."""
    return Window("time", from_seq={d: seq_no + 1 for d, seq_no in reach_then.items()}, last_s=last_s)


COUNT = Window("count")
