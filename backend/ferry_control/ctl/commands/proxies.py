"""`ferryctl haproxy-config CLUSTER`: the HAProxy configuration Ferry renders for a cluster (docs/proxies.md), to a
file or standard output; `ferryctl proxies CLUSTER`: what the proxies in front of it say now."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from ferry_control.ctl.context import App, output_option, pass_app


@click.command("haproxy-config")
@click.argument("cluster")
@click.option("--writer-bind", default="127.0.0.1:3306", show_default=True, help="host:port applications write to")
@click.option("--reader-bind", default="127.0.0.1:3307", show_default=True, help="host:port applications read from")
@click.option("--admin-socket", default="/run/haproxy/ferry.sock", show_default=True,
              help="the admin socket: a path, or host:port; list it in FERRY_HAPROXY_ADMIN_SOCKETS")  # fmt: skip
@click.option("--ferry-address", default=None, help="Ferry's API as HAProxy reaches it (host:port; default: the API's)")
@click.option("--reader-max-lag-s", type=float, default=None, help="the readers' lag limit (default: the API's)")
@click.option(
    "--check-interval-ms",
    type=click.IntRange(100, 60000),
    default=250,
    show_default=True,
    help="how often HAProxy asks for each server's writer role (the reader role: every second, or this)",
)
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write it to this file instead of standard output")  # fmt: skip
@pass_app
def haproxy_config(
    app: App, cluster: str, writer_bind: str, reader_bind: str, admin_socket: str, ferry_address: str | None,
    reader_max_lag_s: float | None, check_interval_ms: int, out_file: Path | None,
) -> None:  # fmt: skip
    """Render the HAProxy configuration of CLUSTER: a writer frontend (the master), a reader frontend (replicas
    within the lag limit), their checks against Ferry's role endpoints, the admin socket. Check it with
    `haproxy -c -f FILE`; HAProxy needs a viewer API token as FERRY_CHECK_TOKEN."""
    found = app.client.cluster(cluster)
    if ferry_address is None:
        parts = urlsplit(app.client.url)
        ferry_address = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    text = app.client.text(
        f"/clusters/{found['id']}/haproxy-config", writer_bind=writer_bind, reader_bind=reader_bind,
        admin_socket=admin_socket, ferry_address=ferry_address, reader_max_lag_s=reader_max_lag_s,
        check_interval_ms=check_interval_ms,
    )  # fmt: skip
    if out_file is None:
        click.echo(text, nl=False)
    else:
        out_file.write_text(text)
        click.echo(f"wrote {out_file}: check it with haproxy -c -f {out_file}", err=True)


@click.command("proxies")
@click.argument("cluster")
@output_option
@pass_app
def proxies(app: App, cluster: str) -> None:
    """The proxies in front of CLUSTER, as their admin sockets say it now: where applications write and read,
    which server writes go to, each server's state.

    \b
    JSON: {"cluster": <cluster>, "proxies": [{"proxy", "reachable", "error", "writer_addresses", "reader_addresses",
           "writer_registered_server_id", "servers": [{"registered_server_id", "writer", "reader"}, …]}, …]}
    """
    found = app.client.cluster(cluster)
    doc = {"cluster": found, "proxies": app.client.get(f"/clusters/{found['id']}/proxies")}
    app.out.document(doc, lambda d: render(app, d))


def render(app: App, doc: dict[str, Any]) -> None:
    if not doc["proxies"]:
        app.out.line(f"no proxy in front of cluster {doc['cluster']['name']} (FERRY_HAPROXY_ADMIN_SOCKETS)")
        return
    app.out.table(
        "proxies",
        ("proxy", "writes at", "go to server", "reads at", "error"),
        (
            [p["proxy"], ", ".join(p["writer_addresses"]), p["writer_registered_server_id"],
             ", ".join(p["reader_addresses"]), p["error"]]
            for p in doc["proxies"]
        ),
    )  # fmt: skip
