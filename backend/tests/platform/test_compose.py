"""docker-compose.yml as Compose reads it: HAProxy's runtime API — as powerful as root on the proxy, and without
authentication — listens only on HAProxy's address on a private network that only HAProxy and the worker join,
never on the network the databases and workloads share, and is never published. (No Docker here: the file is read,
and the admin socket's line rendered by the real renderer.)"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

import yaml

from ferry_control.core.config import Settings
from ferry_control.services.haproxy.config import check_socket_path, socket_line
from tests.ferryd_cluster import REPO_ROOT

COMPOSE = REPO_ROOT / "docker-compose.yml"


def networks_of(service: dict[str, Any]) -> dict[str, Any]:
    joined = service.get("networks") or ["default"]
    return {name: {} for name in joined} if isinstance(joined, list) else {k: v or {} for k, v in joined.items()}


def test_haproxys_runtime_api_listens_only_on_a_private_network_of_its_own_and_the_workers() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    services: dict[str, Any] = compose["services"]
    render = " ".join(services["haproxy-render"]["entrypoint"])
    found = re.search(r'"admin_socket": "([^"]+)"', render)
    assert found, "the render step names no admin_socket"
    admin_socket = check_socket_path(found.group(1))
    host, _, port = admin_socket.rpartition(":")
    address = ipaddress.ip_address(host.strip("[]"))
    assert not address.is_unspecified, f"the runtime API listens on every interface ({admin_socket})"
    assert socket_line(admin_socket) == f"    stats socket ipv4@{address}:{port} level admin"

    [(network, placement)] = [
        (name, spec) for name, spec in networks_of(services["haproxy"]).items()
        if spec.get("ipv4_address") == str(address)
    ]  # fmt: skip
    spec = compose["networks"][network]
    assert spec.get("internal") is True, f"{network} reaches out"
    assert any(address in ipaddress.ip_network(c["subnet"]) for c in spec["ipam"]["config"]), placement
    members = {name for name, service in services.items() if network in networks_of(service)}
    assert members == {"haproxy", "worker"}, members
    published = [p for p in services["haproxy"].get("ports", []) if str(p).split(":")[-1] == port]
    assert published == [], published


def test_the_api_trusts_the_x_forwarded_for_of_the_dashboards_nginx_alone() -> None:
    """Every browser reaches the API through the dashboard's nginx: the API trusts that one address's
    X-Forwarded-For (so each client has its own failed-authentication limit), and nobody else's."""
    compose = yaml.safe_load(COMPOSE.read_text())
    services: dict[str, Any] = compose["services"]
    trusted = json.loads(services["backend"]["environment"]["FERRY_TRUSTED_PROXIES"])
    assert Settings(trusted_proxies=trusted).security.trusted_proxies == trusted
    placed = {
        name: spec["ipv4_address"]
        for name, service in services.items()
        for spec in networks_of(service).values()
        if spec.get("ipv4_address") in trusted
    }
    assert placed == {"frontend": trusted[0]} and len(trusted) == 1, placed
