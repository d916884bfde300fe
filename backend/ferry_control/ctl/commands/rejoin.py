"""`ferryctl rejoin`: bring a fenced former master back as a read-only replica of the new master (the `rejoin`
operation), or see why it cannot: the transactions only it has, per domain."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.commands.moves import IDEMPOTENCY, start
from ferry_control.ctl.context import App, output_option, pass_app, wait_options


@click.command("rejoin")
@click.argument("cluster")
@click.option("--server", "server", required=True, metavar="SERVER", help="The fenced former master (name or id).")
@click.option(
    "--to", "source", metavar="SERVER",
    help="The master it follows (name or id); default: the cluster's one writable master.",
)  # fmt: skip
@click.option(
    "--rewind", is_flag=True,
    help="When it has transactions the master never had: cut them (archived first, the archive kept by the control "
    "plane) and rejoin it. With --dry-run: list what would be cut.",
)  # fmt: skip
@click.option(
    "--rebuild", is_flag=True,
    help="When it has transactions the master never had: archive what its binlog tells of them (kept by the control "
    "plane), then rebuild it from a donor (as ferryctl rebuild does) so that it replicates from the master.",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Compare and plan only; nothing is changed.")
@wait_options
@IDEMPOTENCY
@output_option
@pass_app
def rejoin(
    app: App, cluster: str, server: str, source: str | None, rewind: bool, rebuild: bool, dry_run: bool, wait: bool,
    wait_timeout_s: float | None, idempotency_key: str | None,
) -> None:  # fmt: skip
    """Bring SERVER, a fenced former master of CLUSTER, back as a read-only replica of the master (operator). When it
    has transactions the master never had (acknowledged before it was replaced, never replicated), nothing is
    changed (exit 3) and they are listed per domain: result.only_here — unless --rewind: then they are cut from it,
    archived first (the archive's id is printed; GET /api/v1/clusters/{id}/archives/{archive_id} downloads it), and
    it rejoins.

    \b
    ferryctl rejoin orders --server db1 --dry-run --wait
    ferryctl rejoin orders --server db1 --wait     # exit 0 once it follows the master
    ferryctl rejoin orders --server db1 --rewind --dry-run --wait   # what would be cut
    ferryctl rejoin orders --server db1 --rebuild --wait   # archive what only it has, then rebuild it from a donor
    JSON: the operation (with --wait: as it ended; result.master_registered_server_id, result.only_here, result.rewind).
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"registered_server_id": app.client.server(found, server)["id"], "dry_run": dry_run}
    if rewind and rebuild:
        raise click.UsageError("--rewind and --rebuild are two ways of dealing with them: give one")
    if rewind:
        body["resolve"] = "rewind"
    if rebuild:
        body["resolve"] = "rebuild"
    if source is not None:
        body["master_registered_server_id"] = app.client.server(found, source)["id"]
    start(app, found, "rejoin", body, wait, wait_timeout_s, idempotency_key)
