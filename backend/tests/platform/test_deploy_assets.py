"""deploy/: the Grafana dashboard (JSON) and the Prometheus alert rules (YAML) parse and are complete, and every metric
they name — and every label they filter or group by — exists in the real app's /metrics once it has watched a real
cluster through a switchover and a drill. The stored-state gauges the alerts rest on move with the nodes: a master
made read-only outside an operation, a stopped replica, an unreachable server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import LiveFactory
from tests.ferryd_cluster import REPO_ROOT, FerrydCluster, free_port
from tests.helpers import WAIT_S, finished, register, run_operation, writable_master
from tests.waiting import eventually

DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "ferry-dashboard.json"
ALERTS = REPO_ROOT / "deploy" / "prometheus" / "ferry-alerts.yml"
METRIC = re.compile(r"\bferry_control_[a-z0-9_]+")
GROUPING = re.compile(r"\b(?:by|on|without|ignoring|group_left|group_right)\s*\(([^)]*)\)")
MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*\"")
#: Labels Prometheus adds when it scrapes (not in the exposition itself).
SCRAPE_LABELS = {"instance", "job"}
SEVERITIES = {"critical", "warning", "info"}
#: Series, by metric and labels, whose value a test reads.
Series = dict[str, list[tuple[dict[str, str], float]]]


def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))


def dashboard_expressions(dashboard: dict[str, Any]) -> list[str]:
    expressions = [t["expr"] for p in panels(dashboard["panels"]) for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            expressions.append(variable["definition"])
    return expressions


def alert_rules(alerts: dict[str, Any]) -> list[dict[str, Any]]:
    return [rule for group in alerts["groups"] for rule in group["rules"]]


def all_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    alerts = yaml.safe_load(ALERTS.read_text())
    return dashboard_expressions(dashboard) + [rule["expr"] for rule in alert_rules(alerts)]


def labels_used(expression: str) -> set[str]:
    """Label names an expression filters ({label="…"}) or groups by (by/on/…(labels))."""
    names = {m for m in MATCHER.findall(expression)}
    for group in GROUPING.findall(expression):
        names |= {name.strip() for name in group.split(",") if name.strip()}
    return names


def test_the_dashboard_and_the_rules_parse_and_are_complete() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    ids = [p["id"] for p in panels(dashboard["panels"])]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    titles = " ".join(p["title"].lower() for p in panels(dashboard["panels"]))
    for subject in ("lag", "positions", "collector cycle", "collector polls", "operations", "drill", "health"):
        assert subject in titles, f"no panel about {subject}"
    for panel in panels(dashboard["panels"]):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["targets"], f"{panel['title']}: no query"
        assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
        assert all(METRIC.search(t["expr"]) for t in panel["targets"]), panel["title"]

    rules = alert_rules(yaml.safe_load(ALERTS.read_text()))
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names)), "alert names repeat"
    for rule in rules:
        assert METRIC.search(rule["expr"]), rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
    # What the alerts are for, each by its metric.
    exprs = " ".join(rule["expr"] for rule in rules)
    for metric in (
        "ferry_control_replication_running",  # a replica stopped
        "ferry_control_replication_lag_seconds",  # lag over N s per domain
        "ferry_control_master_read_only_without_operation",
        "ferry_control_drill_last_passed",  # a drill failed
        'ferry_control_collector_polls_total{outcome="error"}',  # collector errors
    ):
        assert metric in exprs, f"no alert on {metric}"


async def scrape(client: httpx.AsyncClient) -> Series:
    """/metrics through the app, with the client's API token (it is token-protected)."""
    response = await client.get("/metrics")
    assert response.status_code == 200, response.text
    series: Series = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append((sample.labels, sample.value))
    return series


def value(series: Series, name: str, **labels: str) -> float | None:
    matching = [v for found, v in series.get(name, []) if all(found.get(k) == w for k, w in labels.items())]
    assert len(matching) <= 1, (name, labels, matching)
    return matching[0] if matching else None


async def until_scraped(client: httpx.AsyncClient, what: str, condition: Callable[[Series], bool]) -> Series:
    async def scraped() -> Series | None:
        series = await scrape(client)
        return series if condition(series) else None

    return await eventually(f"/metrics to show {what}", scraped, WAIT_S)


async def test_every_metric_and_label_named_exists_in_metrics(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(3, domains=(1, 2))
    ferryd.converge()
    async with live_app(collector_enabled=True, poll_interval_s=0.2) as live:
        cluster_id, ids = await register(live.client, ferryd, name="orders")
        # A second cluster whose one server never answers: poll errors, an unreachable server.
        other = await live.client.post("/api/v1/clusters", json={"name": "elsewhere"})
        assert other.status_code == 201, other.text
        dead = await live.client.post(
            f"/api/v1/clusters/{other.json()['id']}/servers",
            json={"name": "dead", "host": "127.0.0.1", "protocol_port": free_port(), "admin_port": free_port()},
        )
        assert dead.status_code == 201, dead.text
        async with live.client_as("viewer") as viewer:
            await until_scraped(
                viewer, "both replicas running, lag per domain and every position",
                lambda s: all(
                    value(s, "ferry_control_replication_running", cluster="orders", replica=r) == 1
                    and value(s, "ferry_control_replication_lag_seconds", cluster="orders", replica=r, domain="2")
                    is not None
                    for r in ("replica1", "replica2")
                )
                and all(
                    (value(s, "ferry_control_server_gtid_seq_no", cluster="orders", server=n, domain=d) or 0) >= 3
                    for n in ids for d in ("1", "2")
                ),
            )  # fmt: skip

            switchover = await run_operation(
                live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]}
            )
            assert switchover["state"] == "succeeded", switchover
            started = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/runs",
                json={"candidate_strategy": "rotation", "switch_back": True},
            )
            assert started.status_code == 202, started.text
            drill = await finished(live.app, live.client, cluster_id, started.json()["operation_id"])
            assert drill["state"] == "succeeded", drill

            # Where the drill left the master role, once the collector has stored it (its links, both replicas
            # running from the master).
            role = {id(node): name for node, name in zip(ferryd.nodes, ("master", "replica1", "replica2"), strict=True)}
            master = writable_master(ferryd.nodes)
            replica = next(node for node in ferryd.nodes if node is not master)
            name, replica_name = role[id(master)], role[id(replica)]
            series = await until_scraped(
                viewer, f"the drill passed, {name} the master, the dead server unreachable",
                lambda s: value(s, "ferry_control_drill_last_passed", cluster="orders") == 1
                and value(s, "ferry_control_operations_running", cluster="orders") == 0
                and value(s, "ferry_control_master_read_only_without_operation", cluster="orders", server=name) == 0
                and all(
                    value(s, "ferry_control_replication_running", cluster="orders", replica=r, master=name) == 1
                    for r in role.values() if r != name
                )
                and value(s, "ferry_control_server_health", cluster="elsewhere", server="dead", state="unreachable")
                == 1
                and (value(s, "ferry_control_collector_polls_total", outcome="error") or 0) > 0,
            )  # fmt: skip

            # Every metric named has series; every label used is on them (or added by the scrape).
            for expression in all_expressions():
                metrics = set(METRIC.findall(expression))
                assert metrics, expression
                labels: set[str] = set(SCRAPE_LABELS)
                for metric in metrics:
                    assert metric in series, f"{metric} (in {expression!r}) is not in /metrics"
                    labels |= {label for found, _ in series[metric] for label in found}
                missing = labels_used(expression) - labels
                assert not missing, f"{expression!r} uses labels {missing} that {metrics} do not have"

            # The alerts' gauges follow the nodes: the master made read-only with no operation running, a replica
            # stopped.
            master.post("/v1/read-only", {"read_only": True})
            replica.post("/v1/replication/main/stop", {})
            await until_scraped(
                viewer, "the read-only master and the stopped replica",
                lambda s: value(s, "ferry_control_master_read_only_without_operation", cluster="orders", server=name)
                == 1
                and value(s, "ferry_control_replication_running", cluster="orders", replica=replica_name) == 0,
            )  # fmt: skip
