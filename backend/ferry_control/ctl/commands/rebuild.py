"""`ferryctl rebuild`: rebuild a replica from a donor (the `rebuild` operation) — its data replaced by a copy of the
donor's, then replicating from the copy's position — and, with --wait, its copy's progress (bytes, rate, ETA)."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.commands.moves import IDEMPOTENCY, start
from ferry_control.ctl.context import App, output_option, pass_app, wait_options


@click.command("rebuild")
@click.argument("cluster")
@click.option("--server", "server", required=True, metavar="SERVER", help="The replica to rebuild (name or id).")
@click.option(
    "--donor", metavar="SERVER",
    help="The server to copy from (name or id); default: the least lagging healthy replica with every domain.",
)  # fmt: skip
@click.option("--force-master-donor", is_flag=True, help="Allow the master as the donor (its copy loads it).")
@click.option(
    "--throttle", "throttle_mb_s", type=click.FloatRange(min=0, max=100_000, min_open=True), metavar="MB/S",
    help="The copy's rate limit in MB/s; default: as fast as it goes.",
)  # fmt: skip
@click.option("--resume", is_flag=True, help="Continue an interrupted copy from the same donor, where the kind can.")
@click.option("--dry-run", is_flag=True, help="Check and plan only; nothing is changed.")
@wait_options
@IDEMPOTENCY
@output_option
@pass_app
def rebuild(
    app: App, cluster: str, server: str, donor: str | None, force_master_donor: bool, throttle_mb_s: float | None,
    resume: bool, dry_run: bool, wait: bool, wait_timeout_s: float | None, idempotency_key: str | None,
) -> None:  # fmt: skip
    """Rebuild SERVER, a replica of CLUSTER, from a donor (operator): it is marked (fenced) and stopped, its data is
    replaced by a copy of the donor's, and it replicates from its source from the copy's position, then is unmarked.
    Cancel it with `ferryctl operations cancel CLUSTER ID`: the server is then left stopped and marked. The cluster's
    host access (an admin's PUT /api/v1/clusters/{id}/host-access) must be set for MariaDB servers.

    \b
    ferryctl rebuild orders --server db3 --dry-run --wait
    ferryctl rebuild orders --server db3 --donor db2 --throttle 100 --wait   # prints bytes, rate and ETA
    JSON: the operation (with --wait: as it ended; result.position, result.progress, result.donor_registered_server_id).
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"registered_server_id": app.client.server(found, server)["id"], "dry_run": dry_run}
    if donor is not None:
        body["donor_registered_server_id"] = app.client.server(found, donor)["id"]
    if force_master_donor:
        body["force_master_donor"] = True
    if throttle_mb_s is not None:
        body["throttle_mb_s"] = throttle_mb_s
    if resume:
        body["resume"] = True
    start(app, found, "rebuild", body, wait, wait_timeout_s, idempotency_key)
