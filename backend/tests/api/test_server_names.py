"""How servers are named to an operator: by their name with the server_id they report beside it ("replica1 (server_id
22)"), the same in a refusal before an operation starts, in an operation's preflight and in its steps; never by the
control plane's own ids, which are another numbering (on these ferryd nodes the two differ on purpose)."""

from __future__ import annotations

import re
from collections.abc import Callable

from ferry_control.core.naming import internal_id, server_label, unknown_server
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import register, run_operation, step
from tests.waiting import eventually

#: The nodes' server_ids: 21 (master), 22 (replica1), 23 (replica2) — none of them a control plane id here.
FIRST_SERVER_ID = 21


def test_a_label_is_the_name_with_the_server_id_beside_it() -> None:
    assert server_label("db-3", 3) == "db-3 (server_id 3)"
    assert server_label("127.0.0.1:3323", 3) == "127.0.0.1:3323 (server_id 3)"
    assert server_label("db-3", None) == "db-3 (server_id not read yet)"
    assert internal_id(10) == "id 10"
    assert unknown_server(10) == "the server with id 10"


def bare_internal_ids(text: str, ids: dict[str, int]) -> list[str]:
    """Every "server N" in `text` naming a server by a control plane id (what no message may do)."""
    return [m for m in re.findall(r"server \d+", text) if int(m.split()[1]) in ids.values()]


async def test_refusals_preflights_and_steps_name_servers_by_name_and_server_id(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(first_server_id=FIRST_SERVER_ID)
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        assert set(ids.values()).isdisjoint({21, 22, 23}), ids
        master, replica1, replica2 = "master (server_id 21)", "replica1 (server_id 22)", "replica2 (server_id 23)"

        # Refused before it starts (the server is asked at once, before any poll recorded its server_id).
        running = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/operations/skip-transactions",
            json={"registered_server_id": ids["replica1"]},
        )
        assert running.status_code == 409, running.text
        message = running.json()["error"]["message"]
        assert message.startswith(f"{replica1}: connection 'main' is running"), message

        # Refused by the operation's preflight.
        refused = await run_operation(
            live.app, live.client, cluster_id, "switchover",
            {"candidate_registered_server_id": ids["replica1"],
             "expected_master_registered_server_id": ids["replica2"]},
        )  # fmt: skip
        assert refused["state"] == "failed", refused
        error = refused["error"]
        assert f"the caller expects {replica2} as master; the master is {master}" in error, error
        assert not bare_internal_ids(error, ids), error

        # An operation's steps.
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]}
        )
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        assert step(operation, "promote_candidate")["detail"].startswith(f"{replica1} is the master and writable")
        assert step(operation, "old_master_read_only")["detail"].startswith(f"{master} refuses writes")
        details = str([s["detail"] for s in operation["steps"]])
        assert not bare_internal_ids(details, ids), details
        verify = step(operation, "verify")["detail"]
        assert sorted(verify["converged"]) == [master, replica2], verify


async def test_the_api_and_the_audit_name_a_server_by_its_label(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(first_server_id=FIRST_SERVER_ID)
    async with live_app(collector_enabled=True, poll_interval_s=0.2) as live:
        cluster_id, ids = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/servers/{ids['replica1']}"

        async def labelled() -> str | None:
            label = (await live.client.get(url)).json()["label"]
            return label if "not read yet" not in label else None

        assert await eventually("the collector to read replica1's server_id", labelled) == "replica1 (server_id 22)"
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        assert {n["label"] for n in topology["nodes"]} >= {"replica1 (server_id 22)"}, topology["nodes"]

        changed = await live.client.put(
            f"{url}/maintenance", json={"maintenance": True, "reason": "disk swap", "duration_s": 3600}
        )
        assert changed.status_code == 200, changed.text
        audit = (await live.client.get("/api/v1/audit", headers=live.tokens.header("admin"))).json()
        row = next(e for e in audit if e["action"] == "set_maintenance")
        assert row["details"]["server"] == "replica1 (server_id 22)", row
