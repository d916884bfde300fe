"""The collector's pure parts: a server's answer is checked field by field before anything of it is stored, and the
master timelines give lag in seconds from when the collector first saw the master past the replica's position."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferry_control.drivers.base import IoState, Positions, ReplicaConnection, ServerStatus, SqlState
from ferry_control.repositories.chunks import CHUNK_IDS_MAX, chunked
from ferry_control.services.collection.timeline import MasterTimelines
from ferry_control.services.collection.validation import InvalidStatus, validate_status

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def status(**positions: str) -> ServerStatus:
    fields = {"binlog": "1-1-5", "slave": "", "current": "1-1-5", "binlog_state": "1-1-5"} | positions
    return ServerStatus(server_id=1, read_only=False, positions=Positions(**fields), connections=(), replicas=())


CONNECTION = ReplicaConnection(
    name="main", master_address="127.0.0.1:7301", running=True, io_state=IoState.connected,
    sql_state=SqlState.applying, received_position="1-1-5", applied_position="1-1-4", master_position="1-1-5",
    lag={}, last_error=None,
)  # fmt: skip


def test_a_well_formed_answer_passes() -> None:
    validate_status(replace(status(binlog_state="1-1-5,1-2-3,2-1-9"), connections=(CONNECTION,)))


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("binlog", "1-1-x", "gtid_binlog_pos"),
        ("slave", "1-1-5,1-2-6", "gtid_slave_pos"),  # two GTIDs of one domain are not a position
        ("current", "garbage", "gtid_current_pos"),
        ("binlog_state", "1-1", "gtid_binlog_state"),
    ],
)
def test_a_malformed_position_is_refused_naming_the_field(field: str, value: str, named: str) -> None:
    with pytest.raises(InvalidStatus, match=named):
        validate_status(status(**{field: value}))


def test_a_malformed_connection_position_is_refused_naming_the_connection() -> None:
    bad = replace(CONNECTION, applied_position="1-1-4-4")
    with pytest.raises(InvalidStatus, match="applied position of connection 'main'"):
        validate_status(replace(status(), connections=(bad,)))


def test_lag_is_the_age_of_the_first_sighting_past_the_replica() -> None:
    timelines = MasterTimelines()
    timelines.observe(1, [(1, 10), (2, 3)], at(0))
    timelines.observe(1, [(1, 12), (2, 3)], at(1))
    timelines.observe(1, [(1, 20), (2, 3)], at(2))
    assert timelines.lag_seconds(1, 1, 20, at(5)) == 0.0, "caught up"
    assert timelines.lag_seconds(1, 1, 12, at(5)) == 3.0, "misses 13..20, first seen at 2 s"
    assert timelines.lag_seconds(1, 1, 10, at(5)) == 4.0, "misses 11..12, first seen at 1 s"
    assert timelines.lag_seconds(1, 1, 0, at(5)) == 5.0, "behind the oldest step: at least its age"
    assert timelines.lag_seconds(1, 2, 3, at(5)) == 0.0
    assert timelines.lag_seconds(1, 3, 0, at(5)) is None, "a domain never seen on that master"
    assert timelines.lag_seconds(2, 1, 0, at(5)) is None, "a server never observed"


def test_a_master_whose_binlog_went_back_starts_a_new_history() -> None:
    timelines = MasterTimelines()
    timelines.observe(1, [(1, 50)], at(0))
    timelines.observe(1, [(1, 5)], at(10))  # e.g. RESET MASTER
    assert timelines.lag_seconds(1, 1, 4, at(12)) == 2.0


def test_history_is_bounded_per_domain() -> None:
    timelines = MasterTimelines(entries_max=3)
    for second in range(10):
        timelines.observe(1, [(1, second + 1)], at(second))
    assert timelines.lag_seconds(1, 1, 0, at(10)) == 3.0, "the oldest kept step is seq 8, seen at 7 s"
    timelines.forget(keep=[])
    assert timelines.lag_seconds(1, 1, 0, at(10)) is None


@given(st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=50), st.integers(0, 600))
def test_lag_never_negative_and_shrinks_as_the_replica_advances(steps: list[int], replica: int) -> None:
    timelines = MasterTimelines()
    seq = 0
    for second, step in enumerate(steps):
        seq += step
        timelines.observe(1, [(1, seq)], at(second))
    now = at(len(steps))
    lags = [timelines.lag_seconds(1, 1, r, now) for r in range(0, seq + 2)]
    assert all(lag is not None and lag >= 0 for lag in lags)
    assert lags == sorted(lags, reverse=True)
    assert lags[-1] == 0.0 and lags[seq] == 0.0


def test_ids_are_queried_in_chunks_each_database_accepts() -> None:
    assert [list(chunk) for chunk in chunked(list(range(5)), 2)] == [[0, 1], [2, 3], [4]]
    assert list(chunked([], 2)) == []
    assert all(len(chunk) <= CHUNK_IDS_MAX for chunk in chunked(list(range(1234))))
