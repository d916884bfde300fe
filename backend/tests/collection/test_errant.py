"""Errant transactions from positions alone (services/errant.py), the words that name them, a replication error in
words with what to do (services/replication_advice.py, drivers/replication_errors.py), and the topology's alerts for
a writable replica and errant transactions — pure functions, no servers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ferry_control.drivers.replication_errors import ReplicationFailure, classify
from ferry_control.models import ServerKind
from ferry_control.schemas.topology import ErrantDomainRead, TopologyEdge, TopologyNode
from ferry_control.services.errant import ErrantDomain, errant_words, find_errant, with_since
from ferry_control.services.replication_advice import connection_error_words
from ferry_control.services.topology import replica_alerts

AT = datetime(2026, 11, 28, 12, 41, tzinfo=UTC)


def test_own_writes_after_the_last_replicated_transaction_are_counted_per_domain() -> None:
    # Server 3 applied 2-1-100 from its master, then wrote 2-3-101 … 2-3-150 itself; in domain 1 it wrote nothing.
    found = find_errant(
        own_server_id=3, binlog_state="1-1-40,2-1-100,2-3-150", slave_pos="1-1-40,2-1-100",
        master_states=["1-1-45,2-1-120"],
    )  # fmt: skip
    assert found == [ErrantDomain(2, 3, "2-3-101", "2-3-150", 50)]


def test_what_a_master_already_has_of_the_server_is_not_errant() -> None:
    # A former master (server 3) whose writes up to 2-3-500 its successor has, then 601 … 650 of its own.
    assert find_errant(own_server_id=3, binlog_state="2-3-500", slave_pos="", master_states=["2-1-600,2-3-500"]) == []
    found = find_errant(
        own_server_id=3, binlog_state="2-1-600,2-3-650", slave_pos="2-1-600", master_states=["2-1-700,2-3-500"]
    )
    assert found == [ErrantDomain(2, 3, "2-3-601", "2-3-650", 50)]


def test_a_domain_no_master_has_counts_from_its_first_transaction() -> None:
    found = find_errant(own_server_id=3, binlog_state="7-3-4", slave_pos="1-1-9", master_states=["1-1-9"])
    assert found == [ErrantDomain(7, 3, "7-3-1", "7-3-4", 4)]


def test_several_masters_any_of_which_has_the_transaction_clear_it() -> None:
    # A multi-source replica: one of its masters replicated its old transaction 5-3-8.
    assert find_errant(own_server_id=3, binlog_state="5-3-8", slave_pos="", master_states=["1-1-9", "5-3-8"]) == []


def test_own_writes_interleaved_with_replicated_ones_cannot_be_counted_from_positions() -> None:
    found = find_errant(own_server_id=3, binlog_state="2-1-12,2-3-10", slave_pos="2-1-12", master_states=["2-1-12"])
    assert found == [ErrantDomain(2, 3, None, "2-3-10", None)]


def test_the_domains_an_admin_made_it_writable_for_are_not_errant() -> None:
    found = find_errant(
        own_server_id=3, binlog_state="2-3-5,3-3-9", slave_pos="", master_states=["1-1-1"], writable_domains=[3]
    )
    assert [e.domain for e in found] == [2]


def test_since_is_kept_for_a_domain_already_errant_and_now_for_a_new_one() -> None:
    earlier = AT - timedelta(minutes=5)
    before = [{"domain": 2, "server_id": 3, "first_gtid": "2-3-1", "last_gtid": "2-3-4", "transactions": 4,
               "since": earlier.isoformat()}]  # fmt: skip
    found = [ErrantDomain(2, 3, "2-3-1", "2-3-9", 9), ErrantDomain(3, 3, "3-3-1", "3-3-2", 2)]
    stored = with_since(found, before, AT)
    assert [s["since"] for s in stored] == [earlier.isoformat(), AT.isoformat()]
    assert stored[0]["last_gtid"] == "2-3-9"


def test_errant_words_name_the_server_masters_domains_counts_gtids_and_time() -> None:
    findings = with_since([ErrantDomain(2, 3, "2-3-1", "2-3-16979", 16979), ErrantDomain(3, 3, None, "3-3-7", None)],
                          [], AT)  # fmt: skip
    words = errant_words("node3 (server_id 3)", ["node1 (server_id 1)"], findings)
    assert words.startswith("node3 (server_id 3) took 16,979 writes of its own while replicating node1 (server_id 1)")
    assert "16,979 in domain 2 (2-3-1 … 2-3-16979) since 2026-11-28 12:41 UTC" in words
    assert "domain 3: its own transactions interleave with replicated ones up to 3-3-7" in words
    assert "rebuild it from its master" in words


def test_each_kind_s_codes_mean_one_failure() -> None:
    assert classify(ServerKind.ferry, "STRICT_MODE") == ReplicationFailure.out_of_order
    assert classify(ServerKind.mariadb, "1950") == ReplicationFailure.out_of_order
    assert classify(ServerKind.mariadb, "1236") == ReplicationFailure.position_missing
    assert classify(ServerKind.ferry, "1950") is None
    assert classify(ServerKind.ferry, None) is None


def test_a_strict_mode_stop_is_told_with_the_errant_domains_and_what_to_do() -> None:
    errant = [{"domain": 3}]
    words = connection_error_words(
        "node3 (server_id 3)", "node1 (server_id 1)", ReplicationFailure.out_of_order, "STRICT_MODE",
        "applying 3-1-12211: GTID 3-1-12211 is not above 3-3-16723", errant,
    )  # fmt: skip
    assert words.startswith("node3 (server_id 3): replication from node1 (server_id 1) stopped: node3 (server_id 3) "
                            "took writes of its own in domain 3")  # fmt: skip
    assert "Skipping would drop node1 (server_id 1)'s transactions instead: rebuild node3" in words
    assert words.endswith("(it reports STRICT_MODE: applying 3-1-12211: GTID 3-1-12211 is not above 3-3-16723)")
    unknown = connection_error_words("r", "m", None, "9999", "something odd")
    assert unknown == "r: replication from m stopped (it reports 9999: something odd)"


def _node(server_id: int, role: str, **over: object) -> TopologyNode:
    fields: dict[str, object] = dict(
        registered_server_id=server_id, name=f"node{server_id}", label=f"node{server_id} (server_id {server_id})",
        host="127.0.0.1", protocol_port=7300 + server_id, admin_port=7400 + server_id, reported_server_id=server_id,
        health="healthy", maintenance=False, read_only=role != "master", role=role, gtid_current_pos="",
    )  # fmt: skip
    return TopologyNode.model_validate(fields | over)


def _edge(replica: int) -> TopologyEdge:
    return TopologyEdge.model_validate(
        dict(link_id=replica, source="replica", connection="main", master_registered_server_id=1,
             master_address="127.0.0.1:7301", replica_registered_server_id=replica, running=True, io_state="connected",
             sql_state="applying", lag={}, last_error_code=None, last_error_message=None, updated_at=AT)
    )  # fmt: skip


def test_a_writable_replica_is_an_alert_unless_an_operation_runs_or_it_is_allowed() -> None:
    nodes = [_node(1, "master"), _node(2, "replica", read_only=False), _node(3, "replica", read_only=False,
             writable_domains=[3])]  # fmt: skip
    edges = [_edge(2), _edge(3)]
    alerts = replica_alerts(nodes, edges, busy=False, enforce=False)
    assert [(a.kind, a.registered_server_id) for a in alerts] == [("writable_replica", 2)]
    assert alerts[0].message.startswith("node2 (server_id 2) replicates node1 (server_id 1) and is writable")
    assert "enforce_read_only_replicas is off" in alerts[0].message
    assert replica_alerts(nodes, edges, busy=True, enforce=True) == []
    in_maintenance = [nodes[0], _node(2, "replica", read_only=False, maintenance=True)]
    assert "in maintenance" in replica_alerts(in_maintenance, edges, busy=False, enforce=True)[0].message


def test_errant_transactions_are_an_alert_even_while_an_operation_runs() -> None:
    errant = ErrantDomainRead(domain=2, server_id=3, first_gtid="2-3-5", last_gtid="2-3-6", transactions=2, since=AT)
    nodes = [_node(1, "master"), _node(3, "replica", errant=[errant])]
    alerts = replica_alerts(nodes, [_edge(3)], busy=True, enforce=True)
    assert [a.kind for a in alerts] == ["errant_transactions"]
    assert "2 in domain 2 (2-3-5 … 2-3-6)" in alerts[0].message
