"""The control plane's one GTID vocabulary (core/gtid.py): how server-reported text reads, and that nothing else
parses GTIDs — every module takes them from it (ferry_engine's GTID math underneath)."""

from __future__ import annotations

import ast

import pytest

from ferry_control.core.gtid import (
    Gtid,
    GtidParseError,
    by_domain,
    canonical,
    canonical_state,
    covers,
    from_gtids,
    join_all,
    position,
    restrict,
    seq_by_domain,
)
from tests.architecture.source import modules, relative, tree

#: The modules that speak to ferry_engine directly: the GTID vocabulary, and the protocol client's constants.
ENGINE_USERS = {"core/gtid.py", "drivers/ferry_protocol.py"}


def test_server_text_reads_in_any_order_and_spacing_and_comes_out_canonical() -> None:
    assert canonical("1-2-50,\n 0-1-100") == "0-1-100,1-2-50"
    assert canonical(None) == canonical("") == ""
    with pytest.raises(GtidParseError):
        position("0-1-5,0-2-6")  # a position has one GTID per domain


def test_a_binlog_state_keeps_one_gtid_per_domain_and_server_sorted() -> None:
    assert canonical_state("1-3-4,0-2-9, 0-1-10") == "0-1-10,0-2-9,1-3-4"


def test_positions_compare_and_combine_by_domain() -> None:
    assert covers("0-1-10,1-1-5", "0-2-9") and not covers("0-1-10", "0-1-10,1-1-1")
    assert by_domain("0-1-10,1-1-5")[1] == Gtid(1, 1, 5)
    assert str(restrict(position("0-1-10,1-1-5,2-1-1"), {0, 2})) == "0-1-10,2-1-1"
    assert str(join_all([position("0-1-10"), position("0-2-12,1-1-1")])) == "0-2-12,1-1-1"
    assert str(from_gtids([Gtid(1, 1, 5), Gtid(0, 1, 3)])) == "0-1-3,1-1-5"


def test_figures_read_stored_text_leniently() -> None:
    assert seq_by_domain("1-1-45,garbage,2-1-20") == {1: 45, 2: 20}


def test_nothing_else_parses_gtids() -> None:
    users = set()
    for path in modules():
        for node in ast.walk(tree(path)):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import) else
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            if any(name.split(".")[0] == "ferry_engine" for name in names):
                users.add(relative(path))
    assert users == ENGINE_USERS
