"""`ferryctl servers list|add|maintenance`."""

from __future__ import annotations

from typing import Any

import click

from ferry_control.ctl.context import App, output_option, pass_app
from ferry_control.ctl.errors import CtlError, ExitCode
from ferry_control.ctl.output import Output

SERVER_COLUMNS = ("id", "name", "host", "protocol_port", "admin_port", "health", "read_only", "maintenance", "fenced")


@click.group("servers")
def servers() -> None:
    """Servers of a cluster: list, add, maintenance."""


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
    out.records("servers", SERVER_COLUMNS, [{**row, "maintenance": maintenance_text(row)} for row in rows])


def maintenance_text(server: dict[str, Any]) -> str:
    """`no`, or who set it, why and when it ends: `yes: disk swap (alice, until 2026-11-26T15:00:00Z)`."""
    detail = server.get("maintenance_detail")
    if not server.get("maintenance"):
        return "no"
    if not detail:
        return "yes"
    until = detail.get("until")
    return (
        f"yes: {detail.get('reason') or 'no reason recorded'} "
        f"({detail.get('owner') or 'owner not recorded'}, {'until ' + until if until else 'no end'})"
    )


#: `--for` units.
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> int:
    """Seconds of `90s`, `15m`, `2h`, `1d` (or a bare number of seconds)."""
    value, unit = (text[:-1], text[-1]) if text and text[-1] in UNITS else (text, "s")
    if not value.isdigit():
        raise CtlError(f"--for {text!r}: expected a number and s, m, h or d (e.g. 2h)", ExitCode.usage)
    return int(value) * UNITS[unit]


def maintenance_body(reason: str | None, duration: str | None, until: str | None) -> dict[str, Any]:
    if not reason:
        raise CtlError("maintenance takes a reason: --reason TEXT", ExitCode.usage)
    if (duration is None) == (until is None):
        raise CtlError("maintenance takes exactly one end: --for DURATION or --until TIME", ExitCode.usage)
    body: dict[str, Any] = {"reason": reason}
    if duration is not None:
        body["duration_s"] = parse_duration(duration)
    else:
        body["until"] = until
    return body


@servers.command("maintenance")
@click.argument("cluster")
@click.argument("server")
@click.option("--reason", help="Why (required to start it).")
@click.option("--for", "duration", metavar="DURATION", help="How long: 90s, 15m, 2h, 1d (at most 7 days).")
@click.option("--until", metavar="TIME", help="When it ends, with its zone: 2026-11-26T18:00:00Z.")
@click.option("--end", is_flag=True, help="End it now.")
@output_option
@pass_app
def maintenance(
    app: App, cluster: str, server: str, reason: str | None, duration: str | None, until: str | None, end: bool
) -> None:
    """Start maintenance of SERVER in CLUSTER (operator; you are its owner) or end it. It ends by itself at its end.

    \b
    ferryctl servers maintenance orders db2 --reason "disk swap" --for 2h
    ferryctl servers maintenance orders db2 --end
    """
    found = app.client.cluster(cluster)
    target = app.client.server(found, server)
    if end:
        if reason or duration or until:
            raise CtlError("--end takes no --reason, --for or --until", ExitCode.usage)
        body: dict[str, Any] = {"maintenance": False}
    else:
        body = {"maintenance": True, **maintenance_body(reason, duration, until)}
    changed = app.client.request("PUT", f"/clusters/{found['id']}/servers/{target['id']}/maintenance", json=body)
    app.out.document(changed, lambda s: app.out.line(f"{s['label']}: maintenance {maintenance_text(s)}"))


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
@click.option(
    "--maintenance",
    "maintenance_reason",
    metavar="REASON",
    help="Register it in maintenance (never chosen as a candidate), for this reason; with --maintenance-for.",
)
@click.option("--maintenance-for", metavar="DURATION", help="How long the maintenance lasts: 90s, 15m, 2h, 1d.")
@output_option
@pass_app
def add_server(
    app: App, cluster: str, host: str, protocol_port: int | None, admin_port: int | None, name: str | None,
    kind: str, labels: tuple[str, ...], maintenance_reason: str | None, maintenance_for: str | None,
) -> None:  # fmt: skip
    """Register a server in CLUSTER (operator).

    \b
    ferryctl servers add orders --name db1 --host 10.0.0.5 --protocol-port 7301 --admin-port 7401
    """
    found = app.client.cluster(cluster)
    body: dict[str, Any] = {"host": host, "kind": kind, "labels": parse_labels(labels)}
    if maintenance_reason is not None or maintenance_for is not None:
        body["maintenance"] = maintenance_body(maintenance_reason, maintenance_for, None)
    for key, value in (("name", name), ("protocol_port", protocol_port), ("admin_port", admin_port)):
        if value is not None:
            body[key] = value
    created = app.client.post(f"/clusters/{found['id']}/servers", body)
    app.out.document(
        created, lambda s: app.out.line(f"server {s['name']} registered in {found['name']} (id {s['id']})")
    )
