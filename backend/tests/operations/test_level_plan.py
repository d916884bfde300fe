"""The leveling's plan (`gtid.level_plan`): what a failover's candidate takes from a peer, and what it never takes —
another master's domains, which each multi-source server gets from that master."""

from __future__ import annotations

from ferry_control.services.orchestrator.gtid import level_plan, position


def test_a_peer_ahead_is_leveled_from_in_each_domain_it_is_ahead() -> None:
    plan = level_plan(position("0-1-10,1-1-5"), position("0-1-12,1-1-4"))
    assert plan is not None
    assert (plan.start, plan.until, plan.restored) == ("0-1-10,1-1-4", "0-1-12", "0-1-12,1-1-5")


def test_another_masters_domain_is_never_taken_from_the_peer() -> None:
    # The peer also follows the master of domain 7, further than the candidate: not copied, nor its position taken.
    plan = level_plan(position("0-1-10,7-9-3"), position("0-1-12,7-9-60"), exclude=[7])
    assert plan is not None
    assert plan.until == "0-1-12"
    assert plan.restored == "0-1-12,7-9-3"


def test_a_peer_ahead_only_in_another_masters_domain_has_nothing_to_level() -> None:
    assert level_plan(position("0-1-10"), position("0-1-10,7-9-60"), exclude=[7]) is None
    assert level_plan(position("0-1-10"), position("0-1-10,7-9-60")) is not None
