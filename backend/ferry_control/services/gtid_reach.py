"""Which servers will never receive a domain's transactions from a given origin (a pure function of the replication
graph the collector recorded): a transaction `d-s-n` reaches a server when the server is its origin (reports
server_id `s`) or one of its connections streams from a server that receives it and lets domain `d` and origin `s`
through (DO_DOMAIN_IDS, IGNORE_DOMAIN_IDS, IGNORE_SERVER_IDS). A server with a connection to a master the control
plane does not know may receive anything through it, and a server never read yet has no known connections: neither
is said to miss anything. The interleavings view
uses it to tell "never here" from "not here yet"."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReachServer:
    id: int
    label: str
    #: The server_id it reports (None: not read yet).
    reported_server_id: int | None


@dataclass(frozen=True)
class ReachLink:
    replica_id: int
    #: None: the master's address matches no registered server.
    master_id: int | None
    connection: str | None
    #: The connection's filters as text by name (`do_domain_ids`: "1,2"…).
    filters: Mapping[str, str] = field(default_factory=dict)


def _ids(filters: Mapping[str, str], name: str) -> set[int] | None:
    """The ids a filter lists; None when it holds something that is no list of numbers (then it is not judged)."""
    try:
        return {int(x) for x in filters.get(name, "").replace(" ", "").split(",") if x}
    except ValueError:
        return None


def blocking_filter(filters: Mapping[str, str], domain: int, origin: int) -> str | None:
    """The filter of a connection that drops `domain`'s transactions from `origin` (None: they pass, or the filter
    cannot be read)."""
    ignored, only, ignored_servers = (
        _ids(filters, n) for n in ("ignore_domain_ids", "do_domain_ids", "ignore_server_ids")
    )
    if ignored is not None and domain in ignored:
        return "ignore_domain_ids"
    if only and domain not in only:
        return "do_domain_ids"
    if ignored_servers is not None and origin in ignored_servers:
        return "ignore_server_ids"
    return None


def never_reasons(
    servers: Sequence[ReachServer], links: Iterable[ReachLink], domain: int, origin: int
) -> dict[int, str]:
    """Per registered server id that will never receive `domain`'s transactions written by server_id `origin`: why,
    in words. Empty when the origin is no registered server (then nothing can be said)."""
    by_id = {s.id: s for s in servers}
    origins = {s.id for s in servers if s.reported_server_id == origin}
    if not origins:
        return {}
    links = list(links)
    unknown_master = {link.replica_id for link in links if link.master_id is None or link.master_id not in by_id}
    downstream: dict[int, list[ReachLink]] = {}
    for link in links:
        if link.master_id in by_id:
            downstream.setdefault(link.master_id, []).append(link)

    def passes(link: ReachLink) -> bool:
        return blocking_filter(link.filters, domain, origin) is None

    receives = origins | _below(downstream, origins, passes)
    downstream_at_all = origins | _below(downstream, origins)
    origin_label = by_id[min(origins)].label
    reasons: dict[int, str] = {}
    for server in servers:
        if server.id in receives or server.id in unknown_master or server.reported_server_id is None:
            continue
        if server.id not in downstream_at_all:
            reasons[server.id] = (
                f"not downstream of {origin_label}, where domain {domain}'s transactions from it are written"
            )
            continue
        # Downstream, but every way there drops the domain: name the filters on the way (its own first).
        blocked = [
            (link.replica_id != server.id, by_id[link.replica_id].label, link.connection, name)
            for link in links
            if link.master_id in receives
            and link.replica_id in downstream_at_all
            and (name := blocking_filter(link.filters, domain, origin)) is not None
            and (link.replica_id == server.id or server.id in _below(downstream, {link.replica_id}))
        ]
        named = "; ".join(
            f"{label}'s connection {connection or '(default)'} filters it out ({name})"
            for _, label, connection, name in sorted(blocked, key=lambda b: (b[0], b[1], b[2] or ""))
        )
        reasons[server.id] = f"domain {domain} does not reach it: {named or 'a filter on the way drops it'}"
    return reasons


def _below(
    downstream: Mapping[int, list[ReachLink]], starts: Iterable[int], passes: Callable[[ReachLink], bool] | None = None
) -> set[int]:
    """Every server downstream of `starts` through links that `passes` lets through (all, when None); a start is in
    it only when a cycle leads back to it."""
    seen: set[int] = set()
    todo = list(starts)
    while todo:
        for link in downstream.get(todo.pop(), []):
            if link.replica_id not in seen and (passes is None or passes(link)):
                seen.add(link.replica_id)
                todo.append(link.replica_id)
    return seen
