"""`ferryctl parallel-apply`: a replica's parallel apply — shown with its apply rate against its master's commit
rate per domain, or changed online (the `parallel_apply` operation)."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.commands.moves import IDEMPOTENCY, start
from ferry_control.ctl.context import App, output_option, pass_app, wait_options
from ferry_control.ctl.output import Output


@click.command("parallel-apply")
@click.argument("cluster")
@click.argument("server")
@click.option("--connection", default=None, help="The replication connection (default: the server's only one).")
@click.option("--mode", default=None, help="ferryd: serial, conservative, optimistic; MariaDB: slave_parallel_mode.")
@click.option("--workers", type=click.IntRange(0, 16383), default=None, help="Transactions applied at once.")
@click.option("--domain-workers-max", type=click.IntRange(0, 16383), default=None, help="Workers at most per domain.")
@click.option(
    "--interval", "interval_s", type=click.FloatRange(0.2, 10.0), default=1.0, show_default=True,
    help="Showing: seconds between the two readings the rates are measured from.",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Changing: check and say what would be set; nothing is changed.")
@wait_options
@IDEMPOTENCY
@output_option
@pass_app
def parallel_apply(
    app: App, cluster: str, server: str, connection: str | None, mode: str | None, workers: int | None,
    domain_workers_max: int | None, interval_s: float, dry_run: bool, wait: bool, wait_timeout_s: float | None,
    idempotency_key: str | None,
) -> None:  # fmt: skip
    """Without --mode/--workers/--domain-workers-max: show SERVER's parallel apply per connection, and per domain
    its apply rate against its master's commit rate ("keeps up", "falls behind by N txn/s"). With any of them:
    change it online (operator; what is left out stays as it is): the connection goes on from its position,
    nothing skipped or applied twice. Values the server's kind refuses are exit 2, nothing changed.

    \b
    ferryctl parallel-apply orders db3                                # rates and settings
    ferryctl parallel-apply orders db3 --mode optimistic --workers 8 --domain-workers-max 8 --wait
    JSON: GET …/parallel-apply's document, or the operation (with --wait: as it ended).
    """
    found = app.client.cluster(cluster)
    target = app.client.server(found, server)
    if mode is None and workers is None and domain_workers_max is None:
        if dry_run:
            raise click.UsageError("--dry-run goes with a change (--mode, --workers or --domain-workers-max)")
        read = app.client.get(f"/clusters/{found['id']}/servers/{target['id']}/parallel-apply", interval_s=interval_s)
        app.out.document(read, lambda r: render(app.out, r))
        return
    body: dict[str, Any] = {"registered_server_id": target["id"], "dry_run": dry_run}
    for key, value in (("connection", connection), ("mode", mode), ("workers", workers),
                       ("domain_workers_max", domain_workers_max)):  # fmt: skip
        if value is not None:
            body[key] = value
    start(app, found, "parallel-apply", body, wait, wait_timeout_s, idempotency_key)


def render(out: Output, read: dict[str, Any]) -> None:
    out.line(f"{read['label']} ({read['kind']}), measured over {read['measured_over_s']} s")
    if not read["connections"]:
        out.line("  no replication connection")
    for c in read["connections"]:
        s = c["settings"]
        out.line(
            f"  connection {c['name']!r}: {s['mode']}, {s['workers']} worker(s), {s['domain_workers_max']} per "
            f"domain — {c['words']}"
        )
        for d in c["domains"]:
            commit = "?" if d["master_commit_rate"] is None else f"{d['master_commit_rate']:,.0f}"
            apply = "?" if d["apply_rate"] is None else f"{d['apply_rate']:,.0f}"
            out.line(f"    domain {d['domain']}: master commits {commit} txn/s, applies {apply} txn/s — {d['words']}")
