"""Candidate rules: which replicas of a source may be promoted in its place, and in which order of preference.

A replica is excluded when it does not answer or reports a failure, is in maintenance, is fenced, has the promotion
rule `must_not`, lacks a label the cluster requires it to share with the source (`candidate_labels`, e.g. the
source's data centre), filters out a domain the source has (it would lose it, for everyone below it too), or —
unless the operator names it — replicates with a configured delay (a delayed replica is kept for disaster
recovery: it is never promoted automatically and never holds an operation back). Among the
others, `prefer` comes before `neutral`, `neutral` before `prefer_not`; a `prefer_not` server is promoted only when no
better one can take over at once, and then `better_successor` names the one the role moves on to afterwards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ferry_control.models import PromotionRule
from ferry_control.services.orchestrator.failures import refused
from ferry_control.services.orchestrator.gtid import ahead_of_all, behind_total, position
from ferry_control.services.orchestrator.snapshot import Link, ServerInfo, ServerView


def delay_of(link: Link) -> int:
    """The connection's configured delay in seconds (0: none)."""
    settings = link.connection.settings
    return max(link.connection.delay_s, settings.delay_s if settings is not None else 0)


def filtered_domains(link: Link, source: ServerView) -> list[int]:
    """Domains of the source's binlog (a lost source's: as last seen) that the replica's connection to it filters
    out (ignore_domain_ids, or a do_domain_ids list without them): promoted in the source's place, it would lose
    them — and so would every server that follows it."""
    settings = link.connection.settings
    if settings is None:
        return []
    try:
        ignored = set(settings.filter_ids("ignore_domain_ids"))
        only = set(settings.filter_ids("do_domain_ids"))
    except ValueError:
        return []
    # A lost source's domains as the collector last saw them.
    domains = (source.binlog if source.status is not None else position(source.info.last_binlog_pos or "")).domains()
    return sorted(d for d in domains if d in ignored or (only and d not in only))


def label_mismatch(replica: ServerInfo, source: ServerInfo, required: Sequence[str]) -> str | None:
    """Why `replica` does not share the required labels with `source` (None when it does)."""
    for name in required:
        wanted, has = source.labels.get(name), replica.labels.get(name)
        if wanted is None:
            continue  # the source has no such label: nothing to stay within
        if has != wanted:
            return f"its label {name}={has if has is not None else '(none)'} differs from the source's {name}={wanted}"
    return None


def exclusions(link: Link, source: ServerView, required_labels: Sequence[str], *, named: bool) -> list[str]:
    """Every reason `link.replica` may not replace `source` (empty: it may). A delay excludes only an automatic
    choice (`named`: the operator asked for this server)."""
    replica = link.replica
    info = replica.info
    reasons = []
    if not replica.healthy:
        reasons.append(
            "it does not answer" if replica.status is None else f"it reports a failure: {replica.status.failure}"
        )
    if info.maintenance:
        reasons.append("it is in maintenance")
    if info.fenced:
        reasons.append("it is fenced")
    if info.promotion_rule == PromotionRule.must_not:
        reasons.append("its promotion rule is must_not")
    if (mismatch := label_mismatch(info, source.info, required_labels)) is not None:
        reasons.append(mismatch)
    if lost := filtered_domains(link, source):
        reasons.append(f"it would lose domain(s) {', '.join(map(str, lost))}: its connection filters them out")
    if not named and (delay := delay_of(link)):
        reasons.append(f"it replicates with a delay of {delay} s (never promoted automatically)")
    return reasons


@dataclass(frozen=True)
class CandidatePool:
    """The replicas of a source that may replace it, and why each other one may not (by label)."""

    eligible: list[Link]
    excluded: dict[str, str]


def candidate_pool(
    links: Sequence[Link], source: ServerView, required_labels: Sequence[str], wanted: int | None = None
) -> CandidatePool:
    """With `wanted` (the operator's choice), the pool is that server alone when it may be promoted; a delay does
    not exclude it then."""
    eligible, excluded = [], {}
    for link in links:
        if wanted is not None and link.replica.info.id != wanted:
            continue
        reasons = exclusions(link, source, required_labels, named=wanted is not None)
        if reasons:
            excluded[link.replica.info.label] = "; ".join(reasons)
        else:
            eligible.append(link)
    if wanted is None:
        return CandidatePool(eligible, excluded)
    # The others are not candidates, but say so: the dry run shows every replica.
    for link in links:
        if link.replica.info.id != wanted:
            excluded.setdefault(link.replica.info.label, "not the requested candidate")
    return CandidatePool(eligible, excluded)


def preference(link: Link) -> tuple[int, int]:
    """Sort key: the better promotion rule first, then the lower server id (stable choices)."""
    return (link.replica.info.promotion_rule.rank, link.replica.info.id)


def better_successor(chosen: Link, pool: Sequence[Link]) -> Link | None:
    """When `chosen` is `prefer_not` and the pool has a server with a better rule, the best such one: the role
    moves on to it once the operation that promoted `chosen` has ended."""
    if chosen.replica.info.promotion_rule != PromotionRule.prefer_not:
        return None
    better = [link for link in pool if link.replica.info.promotion_rule.rank < PromotionRule.prefer_not.rank]
    return min(better, key=preference) if better else None


def choose_candidate(pool: list[Link], links: list[Link]) -> tuple[Link, bool, str]:
    """The replica of `pool` (the candidates, see `candidates.candidate_pool`) to promote, whether it is ahead of
    every other replica of `links` already, and why. Ahead of the others first (the better promotion rule among
    those), else the least behind (leveled from its peers), the better rule breaking ties."""
    if not pool:
        raise refused("no replica can take over: none is a candidate (see the reasons in the plan)")
    positions = {link.replica.info.id: link.replica.current for link in links if link.replica.reachable}

    def others(link: Link) -> list[Any]:
        return [p for i, p in positions.items() if i != link.replica.info.id]

    ahead = [link for link in pool if ahead_of_all(link.replica.current, others(link))]
    if ahead:
        best = min(ahead, key=preference)
        return best, True, f"{best.replica.info.label} at {best.replica.current} is ahead of every other replica"
    best = min(pool, key=lambda link: (behind_total(link.replica.current, others(link)), *preference(link)))
    return (
        best,
        False,
        (
            f"no replica is ahead in every domain; {best.replica.info.label} at {best.replica.current} is the least "
            "behind and will be leveled from its peers"
        ),
    )


def choice_detail(
    chosen: Link, why: str, links: Sequence[Link], candidates: Sequence[Link], excluded: dict[str, str]
) -> dict[str, Any]:
    """The `choose_candidate` step's detail, a failover's and a hub failover's alike: who was chosen and why, every
    reachable replica's position, the candidates with their promotion rule, and who was not one and why."""
    return {
        "chosen": chosen.replica.info.label,
        "why": why,
        "positions": {link.replica.info.label: str(link.replica.current) for link in links if link.replica.reachable},
        "candidates": {link.replica.info.label: link.replica.info.promotion_rule.value for link in candidates},
        "not_candidates": excluded,
    }
