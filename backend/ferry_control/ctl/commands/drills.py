"""`ferryctl drills list|run|history`: drill schedules, running a drill now (switchover or failover), and past runs."""

from __future__ import annotations

import time
from typing import Any

import click

from ferry_control.ctl.context import App, output_option, pass_app, wait_options
from ferry_control.ctl.errors import CtlError, ExitCode
from ferry_control.ctl.progress import POLL_S, follow, parse, was_refused

SCHEDULE_COLUMNS = (
    "id", "name", "kind", "cron", "timezone", "enabled", "candidate_strategy", "switch_back", "next_run_at",
)  # fmt: skip
RUN_COLUMNS = ("id", "kind", "state", "passed", "rto_s", "rpo_lost", "catch_up_s", "requester", "started_at", "reasons")
RUN_ENDED = {"passed", "failed"}


@click.group("drills")
def drills() -> None:
    """Drills (switchover or failover): schedules, run now, history."""


@drills.command("list")
@click.argument("cluster")
@output_option
@pass_app
def list_schedules(app: App, cluster: str) -> None:
    """CLUSTER's drill schedules with their next run (JSON: the API's schedule objects)."""
    found = app.client.cluster(cluster)
    rows = app.client.get(f"/clusters/{found['id']}/drills/schedules")
    app.out.document(
        rows,
        lambda rows: app.out.records("schedules", SCHEDULE_COLUMNS, rows),
    )


@drills.command("history")
@click.argument("cluster")
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True)
@output_option
@pass_app
def history(app: App, cluster: str, limit: int) -> None:
    """CLUSTER's drill runs, newest first: kind, outcome, RTO, a failover drill's RPO, catch-up (JSON: the API's run
    objects)."""
    found = app.client.cluster(cluster)
    rows = app.client.get(f"/clusters/{found['id']}/drills/runs", limit=limit)
    app.out.document(rows, lambda rows: app.out.records("runs", RUN_COLUMNS, rows))


@drills.command("run")
@click.argument("cluster")
@click.option("--schedule", metavar="SCHEDULE", help="Run with this schedule's plan (name or id).")
@click.option(
    "--kind", type=click.Choice(["switchover", "failover"]), default="switchover", show_default=True,
    help="switchover: a planned switchover; failover: the master failed over as if lost (fenced alive, not killed), "
    "RTO and RPO measured, then rejoined as a replica of the new master.",
)  # fmt: skip
@click.option("--to", "to", metavar="SERVER", help="Always this candidate (name or id); default: rotation.")
@click.option("--switch-back", is_flag=True, help="Switch back to the original master after verifying.")
@wait_options
@output_option
@pass_app
def run(
    app: App, cluster: str, schedule: str | None, kind: str, to: str | None, switch_back: bool, wait: bool,
    wait_timeout_s: float | None,
) -> None:  # fmt: skip
    """Run a drill on CLUSTER now (operator); with --wait, exit 0 when it passed, 3 when its preflight refused it,
    4 when it failed. With --schedule, the schedule's plan (its kind included) is used.

    \b
    ferryctl drills run orders --switch-back --wait
    ferryctl drills run orders --kind failover --wait
    JSON: the drill run (with --wait: as it ended).
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"kind": kind, "switch_back": switch_back}
    if schedule is not None:
        schedules = app.client.get(f"/clusters/{found['id']}/drills/schedules")
        match = next((s for s in schedules if s["name"] == schedule or str(s["id"]) == schedule), None)
        if match is None:
            raise CtlError(f"no drill schedule named {schedule!r} in {found['name']!r}", ExitCode.not_found)
        body["schedule_id"] = match["id"]
    if to is not None:
        body.update(candidate_strategy="fixed", candidate_registered_server_id=app.client.server(found, to)["id"])
    started = app.client.post(f"/clusters/{found['id']}/drills/runs", body)
    if not wait:
        app.out.document(
            started, lambda r: app.out.line(f"drill run {r['id']} started (operation {r['operation_id']})")
        )
        return
    app.out.line(f"drill run {started['id']} on {found['name']} (operation {started['operation_id']}):")
    deadline = None if wait_timeout_s is None else time.monotonic() + wait_timeout_s
    operation = follow(app.client, app.out, found["id"], started["operation_id"], wait_timeout_s)
    path = f"/clusters/{found['id']}/drills/runs/{started['id']}"
    ended = app.client.get(path)
    # The run's outcome is written as its operation ends; read until it is there.
    while ended["state"] not in RUN_ENDED:
        if deadline is not None and time.monotonic() >= deadline:
            raise CtlError(f"drill run {started['id']} is still {ended['state']}", ExitCode.timeout, document=ended)
        time.sleep(POLL_S)
        ended = app.client.get(path)
    app.out.document(ended, lambda r: render_run(app, r))
    if ended["state"] == "failed":
        typed = parse(operation)
        reasons = "; ".join(ended["reasons"]) or typed.error or "no reason given"
        code = ExitCode.refused if was_refused(typed) else ExitCode.failed
        raise CtlError(f"drill run {ended['id']} failed: {reasons}", code, code="drill_failed", document=ended)


def render_run(app: App, r: dict[str, Any]) -> None:
    colour = "green" if r["state"] == "passed" else "red"
    app.out.line(f"{r.get('kind', 'switchover')} drill run {r['id']}: [{colour}]{r['state']}[/]")
    fields: list[tuple[str, Any]] = [("rto_s", r["rto_s"])]
    failover = r.get("failover")
    if failover is not None:
        fields += [("writer_rto_s", failover.get("writer_rto_s")), ("rpo_lost", r.get("rpo_lost")),
                   ("rejoined", failover.get("rejoined"))]  # fmt: skip
    fields += [("catch_up_s", r["catch_up_s"]), ("reasons", r["reasons"] or None)]
    app.out.fields(fields)
