"""`ferryctl servers list|add`."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.context import App, output_option, pass_app
from ferry_control.ctl.errors import CtlError, ExitCode
from ferry_control.ctl.output import Output

SERVER_COLUMNS = ("id", "name", "host", "protocol_port", "admin_port", "health", "read_only", "maintenance", "fenced")


@click.group("servers")
def servers() -> None:
    """Servers of a cluster: list, add."""


@servers.command("list")
@click.argument("cluster")
@output_option
@pass_app
def list_servers(app: App, cluster: str) -> None:
    """List the servers of CLUSTER (JSON: the API's server objects)."""
    found = app.client.cluster(cluster)
    rows = app.client.get(f"/clusters/{found['id']}/servers")
    app.out.document(rows, lambda rows: render_servers(app.out, rows))


def render_servers(out: Output, rows: list[dict[str, Any]]) -> None:
    out.records("servers", SERVER_COLUMNS, rows)


def parse_labels(labels: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for label in labels:
        key, sep, value = label.partition("=")
        if not sep or not key:
            raise CtlError(f"--label {label!r}: expected KEY=VALUE", ExitCode.usage)
        parsed[key] = value
    return parsed


@servers.command("add")
@click.argument("cluster")
@click.option("--host", required=True, help="Host name or IP address.")
@click.option("--protocol-port", type=click.IntRange(1, 65535), help="Where clients and replicas connect.")
@click.option("--admin-port", type=click.IntRange(1, 65535), help="The admin API (unset: the server is not polled).")
@click.option("--name", help="Default: host:protocol_port.")
@click.option("--kind", type=click.Choice(["ferry", "mariadb"]), default="ferry", show_default=True)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--maintenance", is_flag=True, help="Register it in maintenance (never chosen as a candidate).")
@output_option
@pass_app
def add_server(
    app: App, cluster: str, host: str, protocol_port: int | None, admin_port: int | None, name: str | None,
    kind: str, labels: tuple[str, ...], maintenance: bool,
) -> None:  # fmt: skip
    """Register a server in CLUSTER (operator).

    \b
    ferryctl servers add orders --name db1 --host 10.0.0.5 --protocol-port 7301 --admin-port 7401
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"host": host, "kind": kind, "labels": parse_labels(labels), "maintenance": maintenance}
    for key, value in (("name", name), ("protocol_port", protocol_port), ("admin_port", admin_port)):
        if value is not None:
            body[key] = value
    created = app.client.post(f"/clusters/{found['id']}/servers", body)
    app.out.document(
        created, lambda s: app.out.line(f"server {s['name']} registered in {found['name']} (id {s['id']})")
    )
