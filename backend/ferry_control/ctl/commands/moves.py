"""`ferryctl switchover`, `failover` and `ack-failover`: the operations that move the master role."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.commands.operations import finish
from ferry_control.ctl.context import App, output_option, pass_app, wait_options
from ferry_control.ctl.progress import parse
from ferry_control.schemas.operation import AnyOperation


def start(
    app: App, cluster: dict[str, Any], kind: str, body: dict[str, Any], wait: bool, timeout_s: float | None,
    idempotency_key: str | None,
) -> None:  # fmt: skip
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
    document = app.client.post(f"/clusters/{cluster['id']}/operations/{kind}", body, headers=headers)
    operation = parse(document)
    if not wait:
        app.out.document(document, lambda _: accepted(app, operation))
        return
    app.out.line(f"{kind} {operation.id} on {cluster['name']}{' (dry run)' if operation.dry_run else ''}:")
    finish(app, cluster["id"], operation.id, timeout_s)


def accepted(app: App, op: AnyOperation) -> None:
    app.out.line(
        f"{op.type} {op.id} accepted ({op.state}); follow it: ferryctl operations follow {op.cluster_id} {op.id}"
    )


IDEMPOTENCY = click.option(
    "--idempotency-key", help="Retrying with the same key gives back the same operation instead of starting another."
)


#: A duration as the API bounds it (more than 0, at most an hour).
SECONDS = click.FloatRange(min=0, max=3600, min_open=True)

FROM = click.option(
    "--from", "source", metavar="SERVER",
    help="The source to replace (name or id): a master of several, or an intermediate master; default: implied "
    "by --to when it has one master, else the cluster's only master.",
)  # fmt: skip


@click.command("switchover")
@click.argument("cluster")
@FROM
@click.option("--to", "to", metavar="SERVER", help="The new master (name or id); default: the best replica.")
@click.option("--expect-master", metavar="SERVER", help="Refuse unless this server is the master now.")
@click.option(
    "--dry-run", is_flag=True,
    help="Run the preflight checks and measure the load for half a second (the forecast: rates and predicted "
    "window, with advice); nothing is changed.",
)  # fmt: skip
@click.option(
    "--max-window", "max_window_s", metavar="SECONDS", type=SECONDS,
    help="The write-unavailability budget: before the master goes read-only, the candidate catches up while the "
    "master takes writes until the predicted window fits this. Default: the cluster's max_window_s, else the "
    "control plane's (10 s).",
)  # fmt: skip
@click.option(
    "--prepare-timeout", "prepare_timeout_s", metavar="SECONDS", type=SECONDS,
    help="How long that catch-up may wait; then the switchover is refused, nothing changed (exit 3). Default: the "
    "control plane's (60 s).",
)  # fmt: skip
@wait_options
@IDEMPOTENCY
@output_option
@pass_app
def switchover(
    app: App, cluster: str, source: str | None, to: str | None, expect_master: str | None, dry_run: bool,
    max_window_s: float | None, prepare_timeout_s: float | None, wait: bool, wait_timeout_s: float | None,
    idempotency_key: str | None,
) -> None:  # fmt: skip
    """Planned switchover of a source's role in CLUSTER — its master, or an intermediate master (operator).

    \b
    ferryctl switchover orders --to db2 --dry-run --wait   # checklist, forecast, advice
    ferryctl switchover orders --to db2 --wait             # steps live; exit 0 when it succeeded
    ferryctl switchover orders --max-window 30 --wait      # accept a 30 s window
    ferryctl switchover seed000 --from s3 --to s5 --wait   # an intermediate master's role
    JSON: the operation (with --wait: as it ended; result.new_master_registered_server_id).
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"dry_run": dry_run}
    if source is not None:
        body["source_registered_server_id"] = app.client.server(found, source)["id"]
    if to is not None:
        body["candidate_registered_server_id"] = app.client.server(found, to)["id"]
    if expect_master is not None:
        body["expected_master_registered_server_id"] = app.client.server(found, expect_master)["id"]
    if max_window_s is not None:
        body["max_window_s"] = max_window_s
    if prepare_timeout_s is not None:
        body["prepare_timeout_s"] = prepare_timeout_s
    start(app, found, "switchover", body, wait, wait_timeout_s, idempotency_key)


@click.command("failover")
@click.argument("cluster")
@FROM
@click.option("--to", "to", metavar="SERVER", help="The new master (name or id); default: the most advanced replica.")
@click.option("--dry-run", is_flag=True, help="Check that the master is lost only; nothing is changed.")
@wait_options
@IDEMPOTENCY
@output_option
@pass_app
def failover(
    app: App, cluster: str, source: str | None, to: str | None, dry_run: bool, wait: bool,
    wait_timeout_s: float | None, idempotency_key: str | None,
) -> None:  # fmt: skip
    """Fail CLUSTER over to a replica after its master was lost (operator). Refused (exit 3) while the master
    answers.

    \b
    ferryctl failover orders --wait
    ferryctl failover seed000 --from s1 --wait   # one master of several
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"dry_run": dry_run}
    if source is not None:
        body["source_registered_server_id"] = app.client.server(found, source)["id"]
    if to is not None:
        body["candidate_registered_server_id"] = app.client.server(found, to)["id"]
    start(app, found, "failover", body, wait, wait_timeout_s, idempotency_key)


@click.command("ack-failover")
@click.argument("cluster")
@output_option
@pass_app
def ack_failover(app: App, cluster: str) -> None:
    """Acknowledge CLUSTER's last failover: automatic failover may run again after the cool-down (operator).
    JSON: the cluster."""
    found = app.client.cluster(cluster)
    updated = app.client.post(f"/clusters/{found['id']}/failover/acknowledge")
    app.out.document(updated, lambda c: app.out.line(f"failover of {c['name']} acknowledged"))
