"""Errant transactions: what a replicating server wrote itself that none of its masters has, per domain, computed
from GTID positions alone (no binlog is read), and told in words.

A server's own transactions are the GTIDs carrying its own server_id. For each domain where its binlog state
(gtid_binlog_state: the last GTID per domain and server_id) holds one of its own, `L`, and no master it replicates
from has that GTID (their binlog states hold nothing of this server_id in the domain, or an older one, `known`),
the domain is errant:

- `last_gtid` is `L`, exact;
- `first_gtid` is the first seq_no after both `known` and `applied` (the last transaction the server applied from
  a master there, its gtid_slave_pos): everything it binlogged in the domain after the last replicated transaction
  is its own (replicated transactions move gtid_slave_pos, and in strict mode seq_nos only increase in a binlog);
- `transactions` is the number of seq_nos from first to last: its own writes there, exactly unless a failed
  transaction left a hole in the sequence (ferryd allows holes; MariaDB's own writes leave none).

When the server applied a replicated transaction after its last own one (its gtid_slave_pos is above `L` in the
domain: a master's seq_no jumped past the server's own), its own transactions interleave with replicated ones and
where they start cannot be told from positions: `first_gtid` and `transactions` are None, and the words say to list
them with the binlog tool. A server's own transactions in the domains an admin made it writable for
(`writable_domains`) are not errant."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ferry_control.core.gtid import parse_state, position


@dataclass(frozen=True)
class ErrantDomain:
    """A server's own transactions in one domain that none of its masters has."""

    domain: int
    #: The server's own server_id (the middle part of its GTIDs).
    server_id: int
    #: Its first own transaction after the last one it applied from a master there (see the module's doc); None
    #: when its own transactions interleave with replicated ones.
    first_gtid: str | None
    last_gtid: str
    #: seq_nos from first_gtid to last_gtid; None with first_gtid None.
    transactions: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def find_errant(
    *,
    own_server_id: int,
    binlog_state: str,
    slave_pos: str,
    master_states: Iterable[str],
    writable_domains: Iterable[int] = (),
) -> list[ErrantDomain]:
    """The errant domains of a server, by domain: `binlog_state` and `slave_pos` are its own, `master_states` the
    binlog states of every master it replicates from."""
    known: dict[int, int] = {}
    for state in master_states:
        for gtid in parse_state(state):
            if gtid.server == own_server_id:
                known[gtid.domain] = max(known.get(gtid.domain, 0), gtid.seq)
    applied = position(slave_pos)
    allowed = set(writable_domains)
    found = []
    for gtid in parse_state(binlog_state):
        if gtid.server != own_server_id or gtid.domain in allowed:
            continue
        master_has = known.get(gtid.domain, 0)
        if gtid.seq <= master_has:
            continue
        replicated = applied.get(gtid.domain)
        last = f"{gtid.domain}-{gtid.server}-{gtid.seq}"
        if replicated is not None and replicated.seq >= gtid.seq:
            found.append(ErrantDomain(gtid.domain, gtid.server, None, last, None))
            continue
        after = max(master_has, replicated.seq if replicated is not None else 0)
        first = f"{gtid.domain}-{gtid.server}-{after + 1}"
        found.append(ErrantDomain(gtid.domain, gtid.server, first, last, gtid.seq - after))
    return sorted(found, key=lambda e: e.domain)


def with_since(found: list[ErrantDomain], before: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """The findings as stored: each with `since`, kept from `before` for a domain already errant then, else `now`."""
    since = {int(e["domain"]): e.get("since") for e in before if "domain" in e}
    return [{**e.as_dict(), "since": since.get(e.domain) or now.isoformat()} for e in found]


def domain_words(finding: dict[str, Any]) -> str:
    """One domain in words: `16,979 in domain 2 (2-3-1 … 2-3-16979) since 2026-11-28 12:41 UTC`."""
    when = _when(finding.get("since"))
    if finding.get("transactions") is None:
        return (
            f"domain {finding['domain']}: its own transactions interleave with replicated ones up to "
            f"{finding['last_gtid']} (list them with the binlog tool, e.g. `--domain {finding['domain']}`){when}"
        )
    count = int(finding["transactions"])
    span = finding["last_gtid"] if count == 1 else f"{finding['first_gtid']} … {finding['last_gtid']}"
    return f"{count:,} in domain {finding['domain']} ({span}){when}"


def errant_words(server: str, masters: list[str], findings: list[dict[str, Any]]) -> str:
    """The standing problem of a server with errant transactions, with what to do."""
    replicating = f" while replicating {', '.join(masters)}" if masters else ""
    total = sum(int(f["transactions"]) for f in findings if f.get("transactions") is not None)
    writes = f"{total:,} write{'s' if total != 1 else ''}" if total else "writes"
    return (
        f"{server} took {writes} of its own{replicating} that no master of it has (errant transactions): "
        + "; ".join(domain_words(f) for f in findings)
        + ". Its history has split from the cluster's: find what writes to it and stop it; then rebuild it from "
        "its master (its own transactions are discarded), or apply them on the master first if they must be kept"
    )


def _when(since: Any) -> str:
    if not since:
        return ""
    try:
        at = datetime.fromisoformat(str(since))
    except ValueError:
        return ""
    return f" since {at.strftime('%Y-%m-%d %H:%M')} UTC"
