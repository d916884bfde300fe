"""A long-running process sets its start-up heap aside from the garbage collector and makes full collections rarer
while it serves, and gives both back when it stops."""

from __future__ import annotations

import gc

from ferry_control.core.heap import FULL_COLLECTION_EVERY, startup_heap_set_aside


def test_the_start_up_heap_is_set_aside_while_serving_and_given_back_after() -> None:
    before = gc.get_threshold()
    with startup_heap_set_aside():
        assert gc.get_freeze_count() > 0, "what existed on entry is out of the collector's reach"
        assert gc.get_threshold() == (before[0], before[1], FULL_COLLECTION_EVERY)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
