"""`ferryctl discover`: register one server and everything its replication graph leads to."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.context import App, output_option, pass_app


@click.command("discover")
@click.argument("cluster")
@click.option("--host", required=True, help="The seed server's host.")
@click.option("--protocol-port", type=click.IntRange(1, 65535), required=True)
@click.option("--admin-port", type=click.IntRange(1, 65535), required=True)
@click.option("--name", help="The seed's name (default: host:protocol_port).")
@click.option("--kind", type=click.Choice(["ferry", "mariadb"]), default="ferry", show_default=True)
@output_option
@pass_app
def discover(
    app: App, cluster: str, host: str, protocol_port: int, admin_port: int, name: str | None, kind: str
) -> None:
    """Register a seed server in CLUSTER and discover its masters and replicas (operator).

    \b
    ferryctl discover orders --host 10.0.0.5 --protocol-port 7301 --admin-port 7401
    JSON: the API's answer, {"seed", "added", "known", "notes"}.
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"host": host, "protocol_port": protocol_port, "admin_port": admin_port, "kind": kind}
    if name is not None:
        body["name"] = name
    result = app.client.post(f"/clusters/{found['id']}/discovery", body)
    app.out.document(result, lambda r: render(app, r))


def render(app: App, result: dict[str, Any]) -> None:
    rows = (
        [("seed", result["seed"])] + [("added", s) for s in result["added"]] + [("known", s) for s in result["known"]]
    )
    app.out.table(
        "discovered", ("", "id", "name", "host", "protocol_port", "admin_port"),
        ([how, s["id"], s["name"], s["host"], s["protocol_port"], s["admin_port"]] for how, s in rows),
    )  # fmt: skip
    for note in result["notes"]:
        app.out.line(f"note (server {note['registered_server_id']}): {note['message']}")
