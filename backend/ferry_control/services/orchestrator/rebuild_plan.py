"""A rebuild's preflight (read only, a precise refusal when it cannot go on): the recipient — in the cluster, not a
master, answering —, the donor — named or chosen (a healthy replica other than the recipient with every domain, the
least lagging), of the recipient's kind, answering, with every domain, the master only when forced —, the source the
recipient replicates from afterwards (its own master before, else the cluster's master) with the connection name and
settings to use, and the host access the kind needs (the driver says whether it needs one)."""

from __future__ import annotations

from dataclasses import dataclass

from ferry_control.core.gtid import seq_by_domain
from ferry_control.drivers.base import ConnectionSettings
from ferry_control.schemas.operation import RebuildParams
from ferry_control.services.orchestrator import rejoin as rejoining  # (a module: rejoin builds on this one)
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.snapshot import ClusterSnapshot, Link, ServerView


@dataclass(frozen=True)
class RebuildPlan:
    recipient: ServerView
    donor: ServerView
    source: ServerView
    connection: str
    settings: ConnectionSettings | None
    #: The recipient's connections before (stopped by the rebuild).
    connections: tuple[str, ...]


def _is_master(snapshot: ClusterSnapshot, view: ServerView) -> bool:
    """Others replicate from it, or it takes writes and replicates from nobody."""
    if snapshot.replicas_of(view.info.id):
        return True
    return view.status is not None and not view.status.read_only and not snapshot.links_of(view.info.id)


def _lag_s(links: list[Link]) -> float:
    return max((lag.seconds for link in links for lag in link.connection.lag.values()), default=0.0)


def plan(snapshot: ClusterSnapshot, params: RebuildParams, default_connection: str) -> RebuildPlan:
    recipient = snapshot.by_id.get(params.registered_server_id)
    if recipient is None:
        raise refused(f"no server with id {params.registered_server_id} in this cluster: nothing was changed")
    label = recipient.info.label
    if not recipient.reachable or recipient.status is None:
        raise refused(
            f"{label} does not answer ({recipient.error}): its server must answer for its data directory to be read "
            "before it is stopped; nothing was changed"
        )
    if snapshot.replicas_of(recipient.info.id):
        names = ", ".join(link.replica.info.label for link in snapshot.replicas_of(recipient.info.id))
        raise refused(
            f"{label} is a master ({names} replicate from it): a master is never rebuilt; nothing was changed"
        )
    if _is_master(snapshot, recipient):
        raise refused(
            f"{label} is a master (writable, replicating from nobody): it is never rebuilt; nothing was changed"
        )
    master, why = snapshot.master()
    if master is None:
        raise refused(f"the cluster's master is not known: {why}; nothing was changed")
    donor = _donor(snapshot, params, recipient, master)
    own = snapshot.links_of(recipient.info.id)
    source = own[0].master if len(own) == 1 else master
    if source.info.protocol_address is None:
        raise refused(f"{source.info.label} has no protocol port recorded: nothing was changed")
    if len(own) == 1:
        name, settings = own[0].connection.name, own[0].connection.settings
    else:
        name, settings = rejoining.follower_conventions(snapshot, source, default_connection)
    connections = tuple(c.name for c in recipient.status.connections)
    return RebuildPlan(recipient, donor, source, name, settings, connections)


def _donor(snapshot: ClusterSnapshot, params: RebuildParams, recipient: ServerView, master: ServerView) -> ServerView:
    wanted_domains = set(seq_by_domain(master.status.positions.binlog if master.status else ""))
    if params.donor_registered_server_id is not None:
        donor = snapshot.by_id.get(params.donor_registered_server_id)
        if donor is None:
            raise refused(f"the donor, server {params.donor_registered_server_id}, is not in this cluster: nothing was "
                          "changed")  # fmt: skip
        problem = _donor_problem(snapshot, donor, recipient, wanted_domains)
        if problem is not None:
            raise refused(f"the donor {donor.info.label} {problem}; nothing was changed")
        if _is_master(snapshot, donor) and not params.force_master_donor:
            raise refused(
                f"the donor {donor.info.label} is the master: its copy would load it; name a replica, or set "
                "force_master_donor; nothing was changed"
            )
        return donor
    candidates = []
    for view in snapshot.views:
        if view is recipient or _is_master(snapshot, view):
            continue
        links = snapshot.links_of(view.info.id)
        if not links or not all(link.replicating for link in links):
            continue
        if _donor_problem(snapshot, view, recipient, wanted_domains) is None:
            candidates.append((_lag_s(links), view.info.id, view))
    if not candidates:
        raise refused(
            "no replica can be the donor (a healthy replica other than the recipient, of its kind, with every domain): "
            "name one, or the master with force_master_donor; nothing was changed"
        )
    return min(candidates, key=lambda c: (c[0], c[1]))[2]


def _donor_problem(
    snapshot: ClusterSnapshot, donor: ServerView, recipient: ServerView, domains: set[int]
) -> str | None:
    if donor.info.id == recipient.info.id:
        return "is the recipient itself"
    if donor.info.kind != recipient.info.kind:
        return f"is a {donor.info.kind.value} server, the recipient a {recipient.info.kind.value} one"
    if not donor.reachable or donor.status is None:
        return f"does not answer ({donor.error})"
    if donor.status.failure is not None:
        return f"reports a failure: {donor.status.failure}"
    have = set(seq_by_domain(donor.status.positions.current))
    missing = sorted(domains - have)
    if missing:
        return f"lacks domain(s) {', '.join(map(str, missing))} of the master's binlog"
    return None
