"""A replication connection's error in words, with the action that fits: what the overview's problems, the topology's
edges and `ferryctl status` say instead of a bare error code. The meaning of a code comes from the drivers
(`drivers.replication_errors.classify`); the server's own message is quoted after the words."""

from __future__ import annotations

from typing import Any

from ferry_control.drivers.replication_errors import ReplicationFailure

#: The longest quote of the server's own message.
QUOTE_MAX = 300


def connection_error_words(
    replica: str,
    master: str,
    failure: ReplicationFailure | None,
    code: str | None,
    message: str | None,
    errant: list[dict[str, Any]] | None = None,
) -> str:
    """`replica` and `master` as labels; `errant`: the replica's errant domains (services/errant.py), if any."""
    said = f"{code}: {message}" if message else (code or "no reason given")
    quote = said if len(said) <= QUOTE_MAX else f"{said[: QUOTE_MAX - 1]}…"
    rebuild = f"rebuild {replica} from {master} (what it wrote itself is discarded)"
    if failure in (ReplicationFailure.out_of_order, ReplicationFailure.two_masters):
        domains = sorted({int(e["domain"]) for e in errant or []})
        where = f" in domain{'s' if len(domains) > 1 else ''} {', '.join(map(str, domains))}" if domains else ""
        words = (
            f"replication from {master} stopped: {replica} took writes of its own{where}, so {master}'s next "
            f"transaction there is not above what it holds (errant transactions: a second history). Skipping would "
            f"drop {master}'s transactions instead: {rebuild}, or apply its own transactions on {master} first if "
            f"they must be kept"
        )
    elif failure == ReplicationFailure.diverged:
        words = (
            f"replication from {master} stopped: {replica}'s history differs from {master}'s (it holds "
            f"transactions {master} never had, or is ahead of it in a domain): {rebuild}, or repoint it to a "
            f"server that has everything it holds"
        )
    elif failure == ReplicationFailure.position_missing:
        words = (
            f"replication from {master} stopped: {master} no longer has (or never had) the transactions "
            f"{replica} needs next: repoint {replica} to a server that still has them, or rebuild it from a copy "
            f"of a current server"
        )
    elif failure == ReplicationFailure.log_unreadable:
        words = (
            f"replication from {master} stopped: a log could not be read (the master's binlog or {replica}'s "
            f"relay log): read the named server's log; start replication again (the relay log is fetched again), "
            f"and if the master's binlog is damaged, repair it first"
        )
    elif failure == ReplicationFailure.access_denied:
        words = (
            f"{master} refused {replica}'s replication login: check the cluster's replication credentials "
            f"(or node token) and the grants on {master}"
        )
    elif failure == ReplicationFailure.apply_failed:
        words = (
            f"a transaction from {master} failed to apply on {replica}: their data differ. Compare their "
            f"checksums; {rebuild}, or skip that one transaction if you know it is safe (the skip operation names it)"
        )
    elif failure == ReplicationFailure.unreachable:
        words = f"{replica} cannot reach {master}: check that {master} runs and the network between them"
    else:
        words = f"replication from {master} stopped"
    return f"{replica}: {words} (it reports {quote})"
