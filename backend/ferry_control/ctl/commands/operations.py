"""`ferryctl operations list|show|follow`, and how an operation is shown (shared with switchover, failover and
drills): read as the API's operation model, its result by field."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from ferry_control.core.naming import connection_label
from ferry_control.ctl import catch_up
from ferry_control.ctl.context import App, output_option, pass_app
from ferry_control.ctl.output import Output
from ferry_control.ctl.progress import (
    TERMINAL_STATES,
    failed_checks,
    follow,
    parse,
    raise_unless_succeeded,
    step_detail,
)
from ferry_control.ctl.rewind import render_rewind
from ferry_control.schemas.operation import AnyOperation, SwitchoverOperation
from ferry_control.schemas.operation_results import (
    MovedConnection,
    MovesWriter,
    SwitchesMaster,
    SwitchoverResult,
    SwitchPlanView,
)

OPERATION_COLUMNS = ("id", "type", "state", "dry_run", "requester", "created_at", "finished_at")
#: Result fields shown in their own form (`render_catch_up`), not as fields.
CATCH_UP_FIELDS = ("catch_up_phase", "window_steps", "forecast", "advice")


@click.group("operations")
def operations() -> None:
    """Operations of a cluster: list, show, follow."""


@operations.command("list")
@click.argument("cluster")
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True)
@output_option
@pass_app
def list_operations(app: App, cluster: str, limit: int) -> None:
    """The newest operations of CLUSTER first (JSON: the API's operation objects)."""
    found = app.client.cluster(cluster)
    rows = app.client.get(f"/clusters/{found['id']}/operations", limit=limit)
    app.out.document(rows, lambda rows: app.out.records(
        None, OPERATION_COLUMNS, rows, empty=f"no operations on {found['name']} yet"
    ))  # fmt: skip


@operations.command("show")
@click.argument("cluster")
@click.argument("operation_id", type=click.IntRange(1))
@output_option
@pass_app
def show_operation(app: App, cluster: str, operation_id: int) -> None:
    """One operation with its steps, checks and result (JSON: the API's operation object)."""
    found = app.client.cluster(cluster)
    operation = app.client.get(f"/clusters/{found['id']}/operations/{operation_id}")
    app.out.document(operation, lambda op: render_operation(app.out, parse(op)))


@operations.command("cancel")
@click.argument("cluster")
@click.argument("operation_id", type=click.IntRange(1))
@output_option
@pass_app
def cancel_operation(app: App, cluster: str, operation_id: int) -> None:
    """Cancel a running operation (operator): it stops as its other stops do, its failure's kind `cancelled`; a
    rebuild leaves its server stopped and marked. Exit 4 with `operation_not_running` when it is not running (JSON:
    the operation as the API answered)."""
    found = app.client.cluster(cluster)
    operation = app.client.post(f"/clusters/{found['id']}/operations/{operation_id}/cancel", {})
    app.out.document(
        operation,
        lambda op: app.out.line(
            f"cancel of operation {operation_id} asked; follow it: ferryctl operations "
            f"follow {found['id']} {operation_id}"
        ),  # fmt: skip
    )


@operations.command("follow")
@click.argument("cluster")
@click.argument("operation_id", type=click.IntRange(1))
@click.option("--timeout", "wait_timeout_s", type=click.FloatRange(min=0, min_open=True), help="Stop following after.")
@output_option
@pass_app
def follow_operation(app: App, cluster: str, operation_id: int, wait_timeout_s: float | None) -> None:
    """Print an operation's steps live until it ends; exit 0 if it succeeded, 3 if it was refused with nothing
    changed (its preflight, or a move's catch-up before the window), 4 if it failed (JSON: the operation as it
    ended)."""
    found = app.client.cluster(cluster)
    finish(app, found["id"], operation_id, wait_timeout_s)


def finish(app: App, cluster_id: int, operation_id: int, timeout_s: float | None) -> dict[str, Any]:
    """Follows the operation to its end, prints it, and raises unless it succeeded."""
    operation = follow(app.client, app.out, cluster_id, operation_id, timeout_s)
    app.out.document(operation, lambda op: render_outcome(app.out, parse(op)))
    raise_unless_succeeded(operation)
    return operation


def render_outcome(out: Output, op: AnyOperation) -> None:
    colour = "green" if op.state == "succeeded" else "red"
    out.line(f"{op.type} {op.id}{' (dry run)' if op.dry_run else ''}: [{colour}]{op.state}[/]")
    figures = _figures(op)
    if op.state == "succeeded" and figures:
        out.fields(
            (k, ", ".join(v) if isinstance(v, list) else v)
            for k, v in figures.items()
            if k != "checks" and k not in CATCH_UP_FIELDS and (not isinstance(v, (dict, list)) or _texts(v))
        )
    render_plan(out, _plan(op))
    render_catch_up(out, op)
    render_rewind(out, op)


def render_catch_up(out: Output, op: AnyOperation) -> None:
    """A master move's catch-up before the window and its window's steps; a dry run's forecast and advice."""
    result = op.result
    if not isinstance(result, SwitchesMaster):
        return
    if result.catch_up_phase is not None:
        catch_up.render_phase(out, result.catch_up_phase, "catch-up", "waited")
    if result.window_steps:
        catch_up.render_window(out, result.unavailable_s, result.window_steps)
    if isinstance(result, SwitchoverResult):
        if result.forecast is not None:
            catch_up.render_phase(out, result.forecast, "forecast", "measured")
        if result.advice:
            catch_up.render_advice(out, result.advice)


def _figures(op: AnyOperation) -> dict[str, Any]:
    """The result's fields that were recorded, for people (its type's model, less what it did not record)."""
    return {} if op.result is None else op.result.model_dump(mode="json", exclude_none=True)


def _plan(op: AnyOperation) -> SwitchPlanView | None:
    return op.result.plan if isinstance(op, SwitchoverOperation) and op.result is not None else None


def render_plan(out: Output, plan: SwitchPlanView | None) -> None:
    """A switchover's plan per domain (its dry run's): each involved server's position in each domain and what it
    replicates from afterwards, then who lends each domain up to which GTID."""
    if plan is None:
        return
    domains = sorted({d for cells in plan.positions.values() for d in cells}, key=int)
    out.table(
        f"plan: {plan.candidate} replaces {plan.source}",
        ("server", *(f"domain {d}" for d in domains), "replicates from afterwards"),
        ([server, *(cells.get(d) for d in domains), ", ".join(plan.afterwards.get(server) or []) or "nothing: a master"]
         for server, cells in plan.positions.items()),
    )  # fmt: skip
    out.fields(plan.lenders.items())
    if plan.moved:
        out.line("settings carried over:")
        for moved in plan.moved:
            catch_up.wrapped(out, moved_words(moved), "  - ", "    ")


def moved_words(moved: MovedConnection) -> str:
    """A connection a switchover makes or repoints, with the settings it carries over, in a sentence."""
    carried = ", ".join(moved.carried) or "the server's defaults"
    dropped = f"; not carried: {', '.join(moved.not_carried)}" if moved.not_carried else ""
    return (
        f"{moved.server} replicates over {connection_label(moved.connection)} from {moved.master} with {carried} "
        f"({moved.settings_from}){dropped}"
    )


def _time(at: datetime | None) -> str | None:
    """As the API writes it."""
    return None if at is None else at.isoformat().replace("+00:00", "Z")


def _texts(value: object) -> bool:
    """A list of strings (GTIDs, say): shown joined."""
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def render_operation(out: Output, op: AnyOperation) -> None:
    out.fields(
        [
            ("operation", f"{op.type} {op.id}{' (dry run)' if op.dry_run else ''}"),
            ("state", op.state),
            ("requester", op.requester),
            ("params", op.params.model_dump(mode="json") or None),
            ("created", _time(op.created_at)),
            ("finished", _time(op.finished_at)),
            ("error", op.error),
        ]
    )
    if op.steps:
        out.table(
            "steps",
            ("step", "state", "seconds", "detail"),
            ([s.name, s.state, s.duration_s, step_detail(s) or None] for s in op.steps),
        )
    checks = op.result.checks if isinstance(op.result, MovesWriter) else None
    if checks:
        out.table("checks", ("check", "passed", "detail"), ([c.name, c.passed, c.detail] for c in checks))
    rest = {k: v for k, v in _figures(op).items() if k not in ("checks", "plan", *CATCH_UP_FIELDS)}
    if rest:
        out.fields(rest.items())
    render_plan(out, _plan(op))
    render_catch_up(out, op)
    if op.state not in TERMINAL_STATES:
        out.line(f"still {op.state}: ferryctl operations follow {op.cluster_id} {op.id}")
    for check in failed_checks(op):
        out.line(f"[red]check {check.name} failed[/]: {check.detail}")
