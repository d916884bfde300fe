"""`ferryctl status CLUSTER`: the topology, what is wrong in words (alerts such as a writable replica or errant
transactions, and replication errors with what to do), errant transactions per server and domain, the positions
matrix (servers × domains) and lag per link and domain."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from ferry_control.ctl.context import App, output_option, pass_app


@click.command("status")
@click.argument("cluster")
@output_option
@pass_app
def status(app: App, cluster: str) -> None:
    """Topology, problems, errant transactions, positions per server and domain, and lag of CLUSTER.

    \b
    JSON: {"cluster": <cluster>, "topology": <the topology graph>, "positions": <the positions matrix>,
           "problems": [<the topology's alerts and replication errors, in words>],
           "errant": [{"server", "domain", "first_gtid", "last_gtid", "transactions", "since"}, …],
           "lag": [{"link_id", "replica_registered_server_id", "replica", "master_registered_server_id", "master",
                    "connection", "running", "domain", "transactions", "seconds", "delay_s", "level",
                    "lag" (in the words of every page: `30 s (delay 30 s, +0 s) · 445 txn`)}, …]}
    """
    found = app.client.cluster(cluster)
    topology = app.client.get(f"/clusters/{found['id']}/topology")
    positions = app.client.get(f"/clusters/{found['id']}/positions")
    doc = {
        "cluster": found, "topology": topology, "positions": positions, "problems": problems(topology),
        "errant": errant_rows(topology), "lag": lag_rows(topology),
    }  # fmt: skip
    app.out.document(doc, lambda d: render(app, d))


def problems(topology: dict[str, Any]) -> list[str]:
    """The alerts' messages, then each replication error in words."""
    found = [alert["message"] for alert in topology.get("alerts", [])]
    found += [edge["last_error_words"] for edge in topology["edges"] if edge.get("last_error_words")]
    return found


def errant_rows(topology: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"server": node["name"], **{k: e[k] for k in ("domain", "first_gtid", "last_gtid", "transactions", "since")}}
        for node in topology["nodes"]
        for e in node.get("errant", [])
    ]


def lag_rows(topology: dict[str, Any]) -> list[dict[str, Any]]:
    names = {n["registered_server_id"]: n["name"] for n in topology["nodes"]}
    rows = []
    for edge in topology["edges"]:
        for domain, lag in sorted(edge["lag"].items(), key=lambda item: int(item[0])):
            rows.append(
                {
                    "link_id": edge["link_id"],
                    "replica_registered_server_id": edge["replica_registered_server_id"],
                    "replica": names.get(edge["replica_registered_server_id"]),
                    "master_registered_server_id": edge["master_registered_server_id"],
                    "master": names.get(edge["master_registered_server_id"], edge["master_address"]),
                    "connection": edge["connection"],
                    "running": edge["running"],
                    "domain": int(domain),
                    "transactions": lag["transactions"],
                    "seconds": lag["seconds"],
                    "delay_s": lag["delay_s"],
                    "level": lag["level"],
                    "lag": lag["words"],
                }
            )
    return rows


def render(app: App, doc: dict[str, Any]) -> None:
    out, topology, positions = app.out, doc["topology"], doc["positions"]
    names = {n["registered_server_id"]: n["name"] for n in topology["nodes"]}
    masters_of: dict[int, list[str]] = {}
    for edge in topology["edges"]:
        master = names.get(edge["master_registered_server_id"], edge["master_address"])
        state = "" if edge["running"] else " (stopped)"
        masters_of.setdefault(edge["replica_registered_server_id"], []).append(f"{master}{state}")
    out.line(f"[bold]cluster {doc['cluster']['name']}[/] (id {doc['cluster']['id']})")
    out.table(
        "topology",
        ("server", "server_id", "role", "health", "read-only", "replicates from", "gtid_current_pos"),
        (
            [n["name"], n.get("reported_server_id") or "-", n["role"],
             n["health"] + (" (maintenance)" if n["maintenance"] else ""), n["read_only"],
             masters_of.get(n["registered_server_id"]), n["gtid_current_pos"]]
            for n in topology["nodes"]
        ),
    )  # fmt: skip
    for problem in doc["problems"]:
        out.line(f"[red]problem:[/] {escape(problem)}")
    if doc["errant"]:
        out.table(
            "errant transactions (written on a replica, on no master of it)",
            ("server", "domain", "transactions", "first", "last", "since"),
            ([r["server"], r["domain"], r["transactions"] if r["transactions"] is not None else "?",
              r["first_gtid"] or "?", r["last_gtid"], r["since"]] for r in doc["errant"]),
        )  # fmt: skip
    domains = positions["domains"]
    out.line(f"most advanced: {positions['most_advanced'] or '-'}")
    out.table(
        "positions",
        ("server", *(f"domain {d}" for d in domains)),
        ([row["name"], *(position_cell(row["cells"].get(str(d))) for d in domains)] for row in positions["rows"]),
    )
    if doc["lag"]:
        out.table(
            "lag",
            ("replica", "master", "connection", "running", "domain", "lag"),
            ([r["replica"], r["master"], r["connection"], r["running"], r["domain"], r["lag"]] for r in doc["lag"]),
        )  # fmt: skip
    else:
        out.line("lag: no replication links")


def position_cell(cell: dict[str, Any] | None) -> str:
    if cell is None or cell.get("gtid") is None:
        return "-"
    behind = cell["behind_transactions"]
    gtid: str = cell["gtid"]
    return gtid + (f" (−{behind})" if behind else "")
