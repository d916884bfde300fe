"""A switchover's plan before anything moves, as its dry run (and a drill's) shows it — pure, from the operation's
snapshot: every involved server's position per domain; per domain, the source up to its GTID now and the server that
sends the rest afterwards; what each server replicates from afterwards; and each connection the move makes or
repoints with the settings it carries over; and the change consumers connected to those servers, with what the move
does to their streams (plan_consumers.py).

What the moves carry over is what they do (hub_switchover.switch_hub, switchover.switch_master):

- an intermediate master's candidate takes each of the hub's incoming connections, under its name, with that
  connection's settings less its delay and its filters;
- the old source (an intermediate master, or a master) then replicates from the candidate over the candidate's
  connection name, with that connection's settings less its delay and its filters (reported none: the server's
  defaults) — the candidate's own connection to it is removed;
- every other replica of the source is repointed to the candidate keeping its own connection's settings.

A connection is named by `connection_label` everywhere here: `'m1'`, or `(default connection)` for MariaDB's `''`."""

from __future__ import annotations

from dataclasses import replace

from ferry_control.core.naming import connection_label
from ferry_control.drivers.base import ConnectionSettings, ReplicaConnection
from ferry_control.schemas.operation_results import MovedConnection, SwitchPlanView
from ferry_control.services.lag import seconds_words
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.orchestrator.plan_consumers import plan_consumers
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView


def switch_plan(snapshot: ClusterSnapshot, source: ServerView, link: Link, others: list[Link]) -> SwitchPlanView:
    """A switchover of `source` (a master, or an intermediate master) to `link.replica`, with `others` the source's
    replicas that will follow the candidate."""
    candidate = link.replica
    incoming = snapshot.links_of(source.info.id)
    kept = [c for c in snapshot.links_of(candidate.info.id) if c.master.info.id != source.info.id]
    involved = [source, candidate, *(o.replica for o in others)]
    src, cand = source.info.label, candidate.info.label
    afterwards: dict[str, list[str]] = {
        cand: [_replicates(c.connection.name, c.master.info.label) for c in [*incoming, *kept]],
        src: [_replicates(link.connection.name, cand)],
    }
    for other in others:
        afterwards[other.replica.info.label] = [_replicates(other.connection.name, cand)]
    senders = domain_senders(incoming)
    consumers, consumers_note = plan_consumers(source, candidate, [o.replica for o in others])

    def then(domain: int) -> str:
        if not incoming:
            return f"then {cand}'s own writes"
        named = senders.get(domain)
        return f"then {' and '.join(named)}" if named else f"then nothing more: none of {src}'s masters has it"

    return SwitchPlanView(
        source=src,
        candidate=cand,
        positions={
            view.info.label: {str(g.domain): f"{g.domain}-{g.server}-{g.seq}" for g in view.current}
            for view in involved
            if view.reachable
        },
        lenders={
            f"domain {g.domain}": f"{src} up to {g.domain}-{g.server}-{g.seq}, {then(g.domain)}"
            for g in (source.current if source.reachable else position(""))
        },
        afterwards=afterwards,
        moved=[
            *(_taken(c, cand) for c in incoming),
            _source_follows(link),
            *(_keeps(o, cand) for o in others),
        ],
        consumers=consumers,
        consumers_note=consumers_note,
    )


def domain_senders(incoming: list[Link]) -> dict[int, list[str]]:
    """Per domain, who sends it over an intermediate master's incoming connections: each connection's master whose
    binlog has the domain (as polled now, else as the collector last saw it), with the connection's name."""
    senders: dict[int, list[str]] = {}
    for c in incoming:
        master = c.master
        binlog = master.binlog if master.reachable else position(master.info.last_binlog_pos or "")
        for gtid in binlog:
            senders.setdefault(gtid.domain, []).append(
                f"{master.info.label} over {connection_label(c.connection.name)}"
            )
    return senders


def settings_words(settings: ConnectionSettings | None) -> list[str]:
    """A connection's settings in words, those set only (empty: none reported)."""
    if settings is None:
        return []
    words = []
    if settings.delay_s:
        words.append(f"delay {seconds_words(settings.delay_s)}")
    if settings.parallel_mode is not None or settings.workers is not None:
        mode = settings.parallel_mode or "parallel"
        if settings.workers is None:
            words.append(f"parallel mode {mode}")
        elif settings.workers == 0:
            words.append(f"parallel mode {mode} with no workers (one transaction at a time)")
        else:
            per_domain = f", at most {settings.domain_workers_max} per domain" if settings.domain_workers_max else ""
            words.append(f"parallel {mode} × {settings.workers} workers{per_domain}")
    if settings.semi_sync_replica is not None:
        words.append(f"semi-sync acknowledgement {'on' if settings.semi_sync_replica else 'off'}")
    if settings.heartbeat_ms is not None:
        words.append(f"heartbeat {seconds_words(settings.heartbeat_ms / 1000)}")
    if settings.ignore_duplicates:
        words.append("ignore duplicates")
    words += [f"{name} = {value}" for name, value in sorted(settings.filters.items())]
    return words


def _replicates(name: str, master: str) -> str:
    return f"{connection_label(name)} from {master}"


def _without_delay_and_filters(connection: ReplicaConnection) -> ConnectionSettings | None:
    """What a moved connection takes of `connection`'s settings."""
    settings = connection.settings
    return None if settings is None else replace(settings, delay_s=0, filters={})


def _not_carried(connection: ReplicaConnection) -> list[str]:
    """The delay and filters of `connection`, which a connection taking its settings leaves behind, in words."""
    settings = connection.settings
    delay_s = max(connection.delay_s, settings.delay_s if settings is not None else 0)
    dropped = [f"delay {seconds_words(delay_s)}"] if delay_s else []
    if settings is not None:
        dropped += [f"{name} = {value}" for name, value in sorted(settings.filters.items())]
    return dropped


def _settings_of(server: str, connection: ReplicaConnection, to: str) -> str:
    """Where a moved connection's settings come from: `server`'s `connection` to `to` (which may report none)."""
    label = connection_label(connection.name)
    if connection.settings is None:
        return f"{server} reports none for its {label} to {to}"
    return f"as on {server}'s {label} to {to}"


def _taken(incoming: Link, candidate: str) -> MovedConnection:
    """One of an intermediate master's incoming connections, as its candidate takes it over."""
    c = incoming.connection
    return MovedConnection(
        server=candidate,
        connection=c.name,
        master=incoming.master.info.label,
        settings_from=_settings_of(incoming.replica.info.label, c, incoming.master.info.label),
        carried=settings_words(_without_delay_and_filters(c)),
        not_carried=_not_carried(c),
    )


def _source_follows(link: Link) -> MovedConnection:
    """The old source's connection to the candidate, over the candidate's connection name with its settings."""
    c = link.connection
    return MovedConnection(
        server=link.master.info.label,
        connection=c.name,
        master=link.replica.info.label,
        settings_from=_settings_of(link.replica.info.label, c, link.master.info.label) + ", which is removed",
        carried=settings_words(_without_delay_and_filters(c)),
        not_carried=_not_carried(c),
    )


def _keeps(other: Link, candidate: str) -> MovedConnection:
    """Another replica of the source, repointed to the candidate with its own connection's settings."""
    return MovedConnection(
        server=other.replica.info.label,
        connection=other.connection.name,
        master=candidate,
        settings_from="its own, kept",
        carried=settings_words(other.connection.settings),
    )
