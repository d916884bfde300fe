"""`ferryctl`'s text output fits the terminal: at 80 columns no line is longer and no value is split across lines. A
table that fits is a table; one that does not is stacked (a block per row, a field per line) and a value longer than
its line is cut with "…"; an empty list says so; a switchover's plan wraps its sentences (the settings each moved
connection carries) at the width."""

from __future__ import annotations

import io

from rich.console import Console

from ferry_control.ctl.commands.operations import render_plan
from ferry_control.ctl.output import Output
from ferry_control.schemas.operation_results import MovedConnection, SwitchPlanView

WIDTH = 80


def output() -> tuple[Output, io.StringIO]:
    out = Output("text")
    buffer = io.StringIO()
    out.out = Console(file=buffer, width=WIDTH, highlight=False, soft_wrap=False, color_system=None)
    return out, buffer


def lines(buffer: io.StringIO) -> list[str]:
    return buffer.getvalue().splitlines()


def test_a_table_that_fits_is_printed_as_a_table_with_every_value_whole() -> None:
    out, buffer = output()
    out.table("servers", ("id", "name", "health"), [(1, "db-1", "healthy"), (2, "db-2", "failing")])
    printed = lines(buffer)
    assert all(len(line) <= WIDTH for line in printed), printed
    header = next(line for line in printed if "name" in line)
    assert "id" in header and "health" in header, printed
    assert any("db-2" in line and "failing" in line for line in printed), printed


def test_a_table_too_wide_is_stacked_and_no_value_is_split() -> None:
    out, buffer = output()
    problem = "replication stopped on db-3 (connection main): " + "SQL error 1062, duplicate entry " * 4
    columns = ("id", "name", "health", "masters", "servers", "worst lag", "auto_failover", "problems")
    rows = [
        (1, "orders-eu-west", "degraded", "orders-eu-west-db-1.internal:3306", 5, "12.3 s / 4512 trx", True, problem),
        (2, "billing", "healthy", "billing-db-1.internal:3306", 3, None, False, None),
    ]
    out.table(None, columns, rows)
    printed = lines(buffer)
    assert all(len(line) <= WIDTH for line in printed), printed
    # Each field on a line of its own, named, with its value whole...
    width = max(len(c) for c in columns)
    for column, value in (("name", "orders-eu-west"), ("masters", "orders-eu-west-db-1.internal:3306"),
                          ("worst lag", "12.3 s / 4512 trx"), ("name", "billing"), ("problems", "-")):  # fmt: skip
        assert f"{column:<{width}}  {value}" in printed, (column, value, printed)
    # ...but one too long for its line, cut with an ellipsis, never continued on the next line.
    cut = next(line for line in printed if line.startswith("problems") and "replication stopped" in line)
    assert cut.endswith("…") and len(cut) == WIDTH, cut
    assert not any(line.strip().startswith("SQL error") for line in printed), printed


def test_fields_are_cut_at_the_width_and_a_line_break_inside_a_value_is_a_space() -> None:
    out, buffer = output()
    out.fields([("error", "the candidate is behind\nin domain 2 " + "x" * 200), ("state", "failed")])
    printed = lines(buffer)
    assert len(printed) == 2, printed
    assert printed[0].startswith("error: the candidate is behind in domain 2 x") and printed[0].endswith("…")
    assert len(printed[0]) == WIDTH and printed[1] == "state: failed", printed


def test_an_empty_list_says_so() -> None:
    out, buffer = output()
    out.records("servers", ("id", "name"), [], empty="no servers yet")
    assert lines(buffer) == ["no servers yet"]


def test_a_plan_lists_each_moved_connection_with_the_settings_it_carries_wrapped_at_the_width() -> None:
    out, buffer = output()
    s1, s3, s4 = "s1 (server_id 1)", "s3 (server_id 3)", "s4 (server_id 4)"
    plan = SwitchPlanView(
        source=s3,
        candidate=s4,
        positions={s3: {"1": "1-1-40"}, s4: {"1": "1-1-38"}},
        lenders={"domain 1": f"{s3} up to 1-1-40, then {s1} over 'm1'"},
        afterwards={s4: [f"'m1' from {s1}"], s3: [f"(default connection) from {s4}"]},
        moved=[
            MovedConnection(server=s4, connection="m1", master=s1, settings_from=f"as on {s3}'s 'm1' to {s1}",
                            carried=["parallel conservative × 4 workers", "heartbeat 30 s"],
                            not_carried=["replicate_ignore_table = app.ignored"]),
            MovedConnection(server=s3, connection="", master=s4, settings_from=f"{s4} reports none for its ''",
                            not_carried=["delay 30 s"]),
        ],
    )  # fmt: skip
    render_plan(out, plan)
    printed = lines(buffer)
    assert all(len(line) <= WIDTH for line in printed), printed
    text = " ".join(line.strip() for line in printed)
    assert f"domain 1: {s3} up to 1-1-40, then {s1} over 'm1'" in text, printed
    assert "settings carried over:" in printed, printed
    assert (
        f"- {s4} replicates over 'm1' from {s1} with parallel conservative × 4 workers, heartbeat 30 s (as on {s3}'s "
        f"'m1' to {s1}); not carried: replicate_ignore_table = app.ignored" in text
    ), printed
    assert f"- {s3} replicates over (default connection) from {s4} with the server's defaults" in text, printed
    assert "not carried: delay 30 s" in text, printed
