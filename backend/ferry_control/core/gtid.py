"""The control plane's one GTID vocabulary, for drivers and services alike: a GTID (`domain-server-seq`) and a
position (at most one GTID per domain) are ferry_engine's — ferry-core's own parsing, ordering and position math —
and this module adds the few readings around them that servers and stored rows need:

- `position`: position text as servers report it (whitespace between GTIDs allowed) → a `GtidPosition`;
- `canonical`: the same as canonical text (sorted by domain, "" for none);
- `parse_state` / `canonical_state`: a binlog state (`gtid_binlog_state`: one GTID per domain and server_id);
- `covers`, `restrict`, `from_gtids`, `join_all`, `per_domain`, `by_domain`: position arithmetic by domain;
- `seq_by_domain`: a lenient reading of stored text for figures (malformed parts left out).

Nothing else in the control plane parses GTID text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ferry_engine import Gtid, GtidParseError, GtidPosition, format_position, parse_gtid

__all__ = [
    "Gtid",
    "GtidParseError",
    "GtidPosition",
    "by_domain",
    "canonical",
    "canonical_state",
    "covers",
    "format_position",
    "from_gtids",
    "gtid_text",
    "join_all",
    "parse_gtid",
    "parse_state",
    "per_domain",
    "position",
    "restrict",
    "seq_by_domain",
]


def _compact(text: str | None) -> str:
    """The text without whitespace (servers may put spaces or newlines between a list's GTIDs)."""
    return "".join((text or "").split())


def position(text: str | None) -> GtidPosition:
    """`0-1-100,1-2-50` (any order; None or "" for none) → the position; `GtidParseError` on bad text."""
    return GtidPosition.parse(_compact(text))


def canonical(text: str | None) -> str:
    """The canonical position text: one GTID per domain, sorted by domain ("" for none)."""
    return str(position(text))


def gtid_text(gtid: Gtid) -> str:
    return str(gtid)


def parse_state(text: str | None) -> list[Gtid]:
    """A binlog state (`gtid_binlog_state`: the last GTID per (domain, server_id), so several per domain)."""
    return [parse_gtid(part) for part in _compact(text).split(",") if part]


def canonical_state(text: str | None) -> str:
    """A binlog state's text sorted by (domain, server_id)."""
    return ",".join(str(g) for g in sorted(parse_state(text), key=lambda g: (g.domain, g.server)))


def by_domain(pos: GtidPosition | str | None) -> dict[int, Gtid]:
    """The GTID of each domain of a position (a dict, to change before `from_gtids`)."""
    return {g.domain: g for g in (pos if isinstance(pos, GtidPosition) else position(pos))}


def covers(have: GtidPosition | str | None, want: GtidPosition | str | None) -> bool:
    """Whether `have` has, in every domain of `want`, a seq_no at least as high."""
    mine = have if isinstance(have, GtidPosition) else position(have)
    return mine.is_ahead_of(want if isinstance(want, GtidPosition) else position(want))


def from_gtids(gtids: Iterable[Gtid]) -> GtidPosition:
    """The position of GTIDs of distinct domains (ValueError for two of one domain)."""
    return GtidPosition.parse(format_position(list(gtids)))


def restrict(pos: GtidPosition, domains: Iterable[int]) -> GtidPosition:
    """The position's GTIDs in `domains` only."""
    wanted = set(domains)
    return from_gtids(g for g in pos if g.domain in wanted)


def join_all(positions: Iterable[GtidPosition]) -> GtidPosition:
    """The least position ahead of every one of `positions`."""
    joined = GtidPosition("")
    for p in positions:
        joined = joined.join(p)
    return joined


def per_domain(pos: GtidPosition) -> Mapping[int, str]:
    return {g.domain: gtid_text(g) for g in pos}


def seq_by_domain(text: str | None) -> dict[int, int]:
    """`1-1-45,2-1-20` → {domain: seq_no}, leaving out the parts that are no GTID (for figures read from stored
    text, where one bad part must not hide the others)."""
    found: dict[int, int] = {}
    for part in _compact(text).split(","):
        try:
            gtid = parse_gtid(part)
        except ValueError:
            continue
        found[gtid.domain] = gtid.seq
    return found
