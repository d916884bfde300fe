"""`ferryctl clusters list|add|show`."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.commands.servers import render_servers
from ferry_control.ctl.context import App, output_option, pass_app
from ferry_control.ctl.output import Output

CLUSTER_COLUMNS = ("id", "name", "health", "masters", "servers", "worst lag", "auto_failover", "problems")


@click.group("clusters")
def clusters() -> None:
    """Clusters: list, add, show."""


@clusters.command("list")
@output_option
@pass_app
def list_clusters(app: App) -> None:
    """List clusters with their health, masters, servers and worst lag (JSON: the API's cluster overview objects)."""
    rows = app.client.get("/clusters/overview")
    app.out.document(rows, lambda rows: app.out.records(
        None, CLUSTER_COLUMNS, [_overview_row(r) for r in rows],
        empty="no clusters yet: ferryctl clusters add NAME, then register its servers",
    ))  # fmt: skip


def _overview_row(cluster: dict[str, Any]) -> dict[str, Any]:
    lag = cluster.get("worst_lag")
    return {
        **cluster,
        "servers": cluster.get("server_count"),
        "worst lag": None if not lag else f"{lag['words']} ({lag['replica']}, domain {lag['domain']})",
        "problems": "; ".join(cluster.get("problems") or []) or None,
    }


@clusters.command("add")
@click.argument("name")
@click.option("--description", default="", help="Free text.")
@click.option(
    "--admin-port-offset",
    type=int,
    default=None,
    help="Discovery: a master's admin port is its protocol port plus this.",
)
@click.option(
    "--auto-failover/--no-auto-failover", default=False, help="Fail over automatically when the master is lost."
)
@output_option
@pass_app
def add_cluster(app: App, name: str, description: str, admin_port_offset: int | None, auto_failover: bool) -> None:
    """Create a cluster named NAME (operator).

    \b
    ferryctl clusters add orders --description "orders service" --admin-port-offset 100
    """
    body: dict[str, Any] = {"name": name, "description": description, "auto_failover": auto_failover}
    if admin_port_offset is not None:
        body["admin_port_offset"] = admin_port_offset
    created = app.client.post("/clusters", body)
    app.out.document(created, lambda c: app.out.line(f"cluster {c['name']} created (id {c['id']})"))


@clusters.command("show")
@click.argument("cluster")
@output_option
@pass_app
def show_cluster(app: App, cluster: str) -> None:
    """A cluster (by name or id) and its servers (JSON: {"cluster": …, "servers": […]})."""
    found = app.client.cluster(cluster)
    servers = app.client.get(f"/clusters/{found['id']}/servers")
    app.out.document({"cluster": found, "servers": servers}, lambda doc: render_cluster(app.out, doc))


def render_cluster(out: Output, doc: dict[str, Any]) -> None:
    c = doc["cluster"]
    out.fields(
        [
            ("cluster", f"{c['name']} (id {c['id']})"),
            ("description", c["description"] or None),
            ("auto failover", c["auto_failover"]),
            ("failover suspended at", c["failover_suspended_at"]),
            ("last failover at", c["last_failover_at"]),
            ("plaintext transport", c.get("plaintext_transport")),
        ]
    )
    render_servers(out, doc["servers"])
