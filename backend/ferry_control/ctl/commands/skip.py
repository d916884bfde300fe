"""`ferryctl skip`: skip the transaction(s) that stopped a replica's connection and start it again (the
`skip_transactions` operation)."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.commands.moves import IDEMPOTENCY, start
from ferry_control.ctl.context import App, output_option, pass_app, wait_options


@click.command("skip")
@click.argument("cluster")
@click.argument("server")
@click.argument("connection", required=False)
@click.option(
    "--count",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="Transactions to skip, from the one that stopped the connection.",
)
@click.option("--dry-run", is_flag=True, help="Check and name the GTIDs that would be skipped; nothing is changed.")
@wait_options
@IDEMPOTENCY
@output_option
@pass_app
def skip(
    app: App, cluster: str, server: str, connection: str | None, count: int, dry_run: bool, wait: bool,
    wait_timeout_s: float | None, idempotency_key: str | None,
) -> None:  # fmt: skip
    """Skip the transaction(s) that stopped SERVER's replication CONNECTION (default: its only one) in CLUSTER,
    then start it again (operator). The skipped transactions are LOST on that replica: not applied there, never
    replicated again. Refused (exit 1) while the connection runs; an unknown connection is exit 6.

    \b
    ferryctl skip orders db3 --dry-run --wait    # which GTID would be skipped
    ferryctl skip orders db3 --wait              # exit 0 once it replicates again
    JSON: the operation (with --wait: as it ended; result.skipped_gtids, result.data_loss, result.replicating).
    """
    found = app.client.cluster(cluster)
    target = app.client.server(found, server)["id"]
    body: dict[str, Any] = {"registered_server_id": target, "count": count, "dry_run": dry_run}
    if connection is not None:
        body["connection"] = connection
    start(app, found, "skip-transactions", body, wait, wait_timeout_s, idempotency_key)
