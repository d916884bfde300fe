"""Fixtures: a binlog written by a real ferryd node, with the GTIDs the node acknowledged for it.

The binary is $FERRYD_BIN, else engine/target/{release,debug}/ferryd; without one the binlog tests error
out (they never skip).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from ferryd import Committed, Node


@dataclass(frozen=True)
class History:
    """What the node was asked to do and said it did, and where its binlog is."""

    binlog_dir: Path
    #: Acknowledged transactions, in commit order.
    acked: list[Committed]
    #: How many of `acked` went to the first binlog file (the rest went to the second, after a flush).
    in_first_file: int

    @property
    def first_file(self) -> Path:
        return self.binlog_dir / "ferry-bin.000001"

    @property
    def second_file(self) -> Path:
        return self.binlog_dir / "ferry-bin.000002"


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """Five transactions over domains 0 and 1, split over two binlog files by a flush; the node is stopped."""
    root = tmp_path_factory.mktemp("node")
    node = Node(root / "data", server_id=1)
    node.start()
    try:
        acked = [
            node.increment(("t", "a", "n", 1), domain=0),
            node.increment(("t", "b", "n", 5), domain=1),
            node.increment(("t", "a", "n", 1), domain=0),
        ]
        assert node.flush_binlog() == "ferry-bin.000002"
        acked += [
            node.increment(("t", "a", "n", 1), ("t", "c", "n", 7), domain=0),
            node.increment(("t", "b", "n", 5), domain=1),
        ]
    finally:
        code = node.stop()
    assert code == 0, f"ferryd exited with {code}:\n{node.log}"
    return History(binlog_dir=node.binlog_dir, acked=acked, in_first_file=3)
