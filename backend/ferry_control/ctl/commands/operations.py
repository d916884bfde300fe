"""`ferryctl operations list|show|follow`, and how an operation is shown (shared with switchover, failover and
drills)."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.context import App, output_option, pass_app
from ferry_control.ctl.output import Output
from ferry_control.ctl.progress import TERMINAL_STATES, failed_checks, follow, raise_unless_succeeded, step_detail

OPERATION_COLUMNS = ("id", "type", "state", "dry_run", "requester", "created_at", "finished_at")


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
    app.out.document(operation, lambda op: render_operation(app.out, op))


@operations.command("follow")
@click.argument("cluster")
@click.argument("operation_id", type=click.IntRange(1))
@click.option("--timeout", "wait_timeout_s", type=click.FloatRange(min=0, min_open=True), help="Stop following after.")
@output_option
@pass_app
def follow_operation(app: App, cluster: str, operation_id: int, wait_timeout_s: float | None) -> None:
    """Print an operation's steps live until it ends; exit 0 if it succeeded, 3 if its preflight refused it, 4 if
    it failed (JSON: the operation as it ended)."""
    found = app.client.cluster(cluster)
    finish(app, found["id"], operation_id, wait_timeout_s)


def finish(app: App, cluster_id: int, operation_id: int, timeout_s: float | None) -> dict[str, Any]:
    """Follows the operation to its end, prints it, and raises unless it succeeded."""
    operation = follow(app.client, app.out, cluster_id, operation_id, timeout_s)
    app.out.document(operation, lambda op: render_outcome(app.out, op))
    raise_unless_succeeded(operation)
    return operation


def render_outcome(out: Output, op: dict[str, Any]) -> None:
    colour = "green" if op["state"] == "succeeded" else "red"
    out.line(f"{op['type']} {op['id']}{' (dry run)' if op['dry_run'] else ''}: [{colour}]{op['state']}[/]")
    result = op.get("result") or {}
    if op["state"] == "succeeded" and result:
        out.fields(
            (k, ", ".join(v) if isinstance(v, list) else v)
            for k, v in result.items()
            if k != "checks" and (not isinstance(v, (dict, list)) or _texts(v))
        )
    render_plan(out, result.get("plan"))


def render_plan(out: Output, plan: Any) -> None:
    """A switchover's plan per domain (its dry run's): each involved server's position in each domain and what it
    replicates from afterwards, then who lends each domain up to which GTID."""
    if not isinstance(plan, dict) or not isinstance(plan.get("positions"), dict):
        return
    positions: dict[str, dict[str, str]] = plan["positions"]
    afterwards: dict[str, list[str]] = plan.get("afterwards") or {}
    domains = sorted({d for cells in positions.values() for d in cells}, key=int)
    out.table(
        f"plan: {plan.get('candidate')} replaces {plan.get('source')}",
        ("server", *(f"domain {d}" for d in domains), "replicates from afterwards"),
        ([server, *(cells.get(d) for d in domains), ", ".join(afterwards.get(server) or []) or "nothing: a master"]
         for server, cells in positions.items()),
    )  # fmt: skip
    out.fields((domain, lender) for domain, lender in (plan.get("lenders") or {}).items())


def _texts(value: object) -> bool:
    """A list of strings (GTIDs, say): shown joined."""
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def render_operation(out: Output, op: dict[str, Any]) -> None:
    out.fields(
        [
            ("operation", f"{op['type']} {op['id']}{' (dry run)' if op['dry_run'] else ''}"),
            ("state", op["state"]),
            ("requester", op["requester"]),
            ("params", op["params"] or None),
            ("created", op["created_at"]),
            ("finished", op["finished_at"]),
            ("error", op["error"]),
        ]
    )
    if op["steps"]:
        out.table(
            "steps",
            ("step", "state", "seconds", "detail"),
            ([s["name"], s["state"], s.get("duration_s"), step_detail(s) or None] for s in op["steps"]),
        )
    result = op.get("result") or {}
    if result.get("checks"):
        out.table(
            "checks",
            ("check", "passed", "detail"),
            ([c["name"], c["passed"], c.get("detail")] for c in result["checks"]),
        )
    rest = {k: v for k, v in result.items() if k not in ("checks", "plan")}
    if rest:
        out.fields(rest.items())
    render_plan(out, result.get("plan"))
    if op["state"] not in TERMINAL_STATES:
        out.line(f"still {op['state']}: ferryctl operations follow {op['cluster_id']} {op['id']}")
    for check in failed_checks(op):
        out.line(f"[red]check {check['name']} failed[/]: {check.get('detail')}")
