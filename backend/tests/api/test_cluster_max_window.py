"""The cluster setting `max_window_s`: the write-unavailability budget of a cluster's switchovers and drills when the
operation gives none (null: the control plane's `switchover_max_window_s`). Its bounds are refused precisely with
nothing changed; on a real ferryd cluster a dry run's forecast, a switchover's catch-up phase and a drill's report
carry the cluster's budget, an operation's own wins, and null puts the control plane's default back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import finished, register, run_operation, step

BAD_VALUES = (
    (0, "greater than 0"),
    (-1, "greater than 0"),
    (3601, "less than or equal to 3600"),
    ("soon", "valid number"),
)


async def test_max_window_s_is_a_nullable_cluster_setting_with_bounds(client: Any) -> None:
    for bad, words in BAD_VALUES:
        refused = await client.post("/api/v1/clusters", json={"name": "refused", "max_window_s": bad})
        assert refused.status_code == 422 and words in refused.text and "max_window_s" in refused.text, (bad, refused)
    assert (await client.get("/api/v1/clusters")).json() == [], "no cluster was created by a refused body"
    created = await client.post("/api/v1/clusters", json={"name": "busy"})
    assert created.status_code == 201 and created.json()["max_window_s"] is None, created.text
    url = f"/api/v1/clusters/{created.json()['id']}"
    for bad, words in BAD_VALUES:
        # With another field beside it: nothing of a refused request is applied.
        refused = await client.patch(url, json={"max_window_s": bad, "description": "changed"})
        assert refused.status_code == 422 and words in refused.text and "max_window_s" in refused.text, (bad, refused)
    unchanged = (await client.get(url)).json()
    assert (unchanged["max_window_s"], unchanged["description"]) == (None, ""), "nothing changed"
    changed = await client.patch(url, json={"max_window_s": 30.5})
    assert changed.status_code == 200 and changed.json()["max_window_s"] == 30.5, changed.text
    untouched = await client.patch(url, json={"description": "orders"})
    assert untouched.json()["max_window_s"] == 30.5, "a PATCH without the field keeps it"
    reset = await client.patch(url, json={"max_window_s": None})
    assert reset.status_code == 200 and reset.json()["max_window_s"] is None, reset.text
    assert (await client.get(url)).json()["max_window_s"] is None
    given = await client.post("/api/v1/clusters", json={"name": "given", "max_window_s": 3600})
    assert given.status_code == 201 and given.json()["max_window_s"] == 3600, given.text


async def test_the_clusters_budget_is_its_switchovers_and_drills_unless_the_operation_gives_one(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    cluster_budget_s, own_budget_s = 42.0, 7.0
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd, max_window_s=cluster_budget_s)
        default_s = live.app.state.settings.operations.switchover_max_window_s
        assert default_s not in (cluster_budget_s, own_budget_s), "the budgets must be told apart"

        dry = await run_operation(live.app, live.client, cluster_id, "switchover", {"dry_run": True})
        assert dry["state"] == "succeeded", dry["error"]
        assert dry["result"]["forecast"]["max_window_s"] == cluster_budget_s, dry["result"]

        moved = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]}
        )
        assert moved["state"] == "succeeded", (moved["error"], moved["steps"])
        assert moved["result"]["catch_up_phase"]["max_window_s"] == cluster_budget_s, moved["result"]
        assert step(moved, "catch_up_before_window")["detail"]["max_window_s"] == cluster_budget_s

        own = await run_operation(
            live.app, live.client, cluster_id, "switchover",
            {"candidate_registered_server_id": ids["master"], "max_window_s": own_budget_s},
        )  # fmt: skip
        assert own["state"] == "succeeded", (own["error"], own["steps"])
        assert own["result"]["catch_up_phase"]["max_window_s"] == own_budget_s, own["result"]

        # A drill goes through the same moves: the cluster's budget, there and back.
        response = await live.client.post(
            f"/api/v1/clusters/{cluster_id}/drills/runs",
            json={
                "candidate_strategy": "fixed",
                "candidate_registered_server_id": ids["replica2"],
                "switch_back": True,
            },
        )
        assert response.status_code == 202, response.text
        drill = await finished(live.app, live.client, cluster_id, response.json()["operation_id"])
        assert drill["state"] == "succeeded", (drill["error"], drill["steps"])
        run = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{response.json()['id']}")).json()
        for part in ("switchover", "switch_back"):
            assert run["details"][part]["catch_up_phase"]["max_window_s"] == cluster_budget_s, run["details"]

        # Null puts the control plane's default back.
        reset = await live.client.patch(f"/api/v1/clusters/{cluster_id}", json={"max_window_s": None})
        assert reset.status_code == 200, reset.text
        back = await run_operation(live.app, live.client, cluster_id, "switchover", {"dry_run": True})
        assert back["result"]["forecast"]["max_window_s"] == default_s, back["result"]
