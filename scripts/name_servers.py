"""Registers a stack's MariaDB servers under the names `make up` prints: s1, s2, … by their number in the cluster's
cluster.json. Discovery names a server by its address (127.0.0.1:3321); this renames each through the control
plane's API (PATCH /api/v1/clusters/{id}/servers/{registered id} with {"name": "sN"}), so what `make up` prints is
what `ferryctl failover seed000 --from s1 --wait` and the dashboard call it. Idempotent: a server already so named
is left alone. Reads the stack's stack.json (API address, admin token, the MariaDB clusters and their cluster.json).

    .venv/bin/python scripts/name_servers.py .run/stack.json
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any


def call(api: str, token: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        f"{api}/api/v1{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def address(host: str, port: int | None) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def name_servers(stack: dict[str, Any]) -> list[str]:
    """Renames every MariaDB cluster's servers to sN; returns what it did, a line each."""
    done = []
    for cluster in stack.get("mariadb_clusters", []):
        with open(cluster["cluster_json"]) as f:
            numbers = {s["address"]: s["number"] for s in json.load(f)["servers"]}
        for server in call(stack["api"], stack["admin_token"], "GET", f"/clusters/{cluster['id']}/servers"):
            number = numbers.get(address(server["host"], server["protocol_port"]))
            if number is None or server["name"] == f"s{number}":
                continue
            path = f"/clusters/{cluster['id']}/servers/{server['id']}"
            call(stack["api"], stack["admin_token"], "PATCH", path, {"name": f"s{number}"})
            done.append(f"{cluster['name']}: {server['name']} registered as s{number}")
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        stack = json.load(f)
    for line in name_servers(stack):
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
