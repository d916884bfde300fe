"""The control plane and change consumers, against real ferryd nodes: the ferry driver reads a node's consumers (its
status and GET /v1/consumers) with their position and lag; the API shows a server's consumers read from it now (404,
409 for a server that does not answer); a switchover's plan names each consumer of the servers it moves and what the
move does to its stream, saying what the servers cannot know."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ferry_control.core.config import Settings
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.ferry_subscription import Subscription
from ferry_control.models import ServerKind
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import register, run_operation
from tests.waiting import eventually

CONSUMER_TOKEN = "test-consumer-token-0123456789"


def with_consumers(tmp_path: Path, ferryd_factory: Callable[..., FerrydCluster]) -> FerrydCluster:
    """Three nodes (a master and two replicas) that accept change consumers with `CONSUMER_TOKEN`."""
    token = tmp_path / "consumer-token"
    token.write_text(CONSUMER_TOKEN)
    return ferryd_factory(("--consumer-token-file", str(token)))


async def test_the_ferry_driver_reads_a_nodes_consumers_with_their_position_and_lag(
    settings: Settings, tmp_path: Path, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = with_consumers(tmp_path, ferryd_factory)
    first = ferryd.master.increment(domain=1)
    ferryd.converge()
    drivers = DriverFactory(settings)
    try:
        master = drivers.for_address(ServerKind.ferry, ferryd.master.admin)
        assert (await master.change_consumers()).consumers == ()
        assert (await master.status()).consumers == ()
        async with await Subscription.open(
            ferryd.master.listen, token=CONSUMER_TOKEN, name="cache", start="", domains=[1]
        ) as sub:
            change, _ = await anext(sub)
            assert change.gtid == first
            report = await eventually(
                "the consumer listed at its position",
                lambda: _listed_at(master.change_consumers(), first),
            )
            (consumer,) = report.consumers
            assert (consumer.name, consumer.domains, consumer.start_position) == ("cache", (1,), "")
            assert consumer.lag[1].transactions == 0 and consumer.transactions_sent == 1
            assert report.consumers_max == 64 and report.cut_off == ()
            status = await eventually(
                "both replicas listed by the master", lambda: _with_replicas(master.status(), [2, 3])
            )
            assert [c.name for c in status.consumers or ()] == ["cache"], "the consumer, listed apart from the replicas"
        await eventually("the consumer gone", lambda: _none_listed(master.change_consumers()))
    finally:
        await drivers.aclose()


async def _listed_at(read, position: str):  # type: ignore[no-untyped-def]
    report = await read
    return report if [c.position for c in report.consumers] == [position] else None


async def _with_replicas(read, server_ids: list[int]):  # type: ignore[no-untyped-def]
    """The status once it lists exactly these replicas: a replica connects on its own schedule after it starts."""
    status = await read
    return status if sorted(r.server_id for r in status.replicas) == server_ids else None


async def _none_listed(read) -> bool:  # type: ignore[no-untyped-def]
    return (await read).consumers == ()


async def test_the_api_shows_a_servers_consumers_read_from_it_now(
    live_app: LiveFactory, tmp_path: Path, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = with_consumers(tmp_path, ferryd_factory)
    gtid = ferryd.master.increment(domain=2)
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        url = f"/api/v1/clusters/{cluster_id}/servers/{ids['replica1']}/consumers"
        answer = await live.client.get(url)
        assert answer.status_code == 200, answer.text
        assert (answer.json()["supported"], answer.json()["consumers"]) == (True, [])
        assert answer.json()["words"] == f"No change consumer streams from {answer.json()['label']} now."

        # A consumer of a replica is that replica's, with its lag in its domains.
        async with await Subscription.open(ferryd.replica1.listen, token=CONSUMER_TOKEN, name="indexer", start=""):

            async def listed() -> dict | None:  # type: ignore[type-arg]
                body = (await live.client.get(url)).json()
                return body if [c["position"] for c in body["consumers"]] == [gtid] else None

            body = await eventually("the replica's consumer listed at its position", listed)
            (consumer,) = body["consumers"]
            assert (consumer["name"], consumer["domains"], consumer["transactions_sent"]) == ("indexer", [], 1)
            assert consumer["lag"] == {"2": {"transactions": 0, "seconds": 0.0}}
            assert body["words"].startswith("1 change consumer(s) stream from") and body["consumers_max"] == 64

        missing = await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/999999/consumers")
        assert missing.status_code == 404, missing.text
        ferryd.replica2.stop()
        gone = await live.client.get(f"/api/v1/clusters/{cluster_id}/servers/{ids['replica2']}/consumers")
        assert (gone.status_code, gone.json()["error"]["code"]) == (409, "server_unreachable"), gone.text
        assert "cannot be read now" in gone.json()["error"]["message"]


async def test_a_switchover_plan_names_the_consumers_of_the_servers_it_moves(
    live_app: LiveFactory, tmp_path: Path, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = with_consumers(tmp_path, ferryd_factory)
    ferryd.master.increment(domain=1)
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        opened = [
            await Subscription.open(node.listen, token=CONSUMER_TOKEN, name=name, start="")
            for node, name in ((ferryd.master, "on-master"), (ferryd.replica1, "on-candidate"), (ferryd.replica2, "x"))
        ]
        try:
            for sub in opened:
                await anext(sub)
            operation = await run_operation(
                live.app, live.client, cluster_id, "switchover",
                {"candidate_server_id": ids["replica1"], "dry_run": True},
            )  # fmt: skip
        finally:
            for sub in opened:
                await sub.close()
    assert operation["state"] == "succeeded", operation["error"]
    plan = operation["result"]["plan"]
    fates = {c["name"]: (c["server"], c["afterwards"]) for c in plan["consumers"]}
    master, candidate, other = (
        plan["source"],
        plan["candidate"],
        next(s for s in plan["positions"] if s not in (plan["source"], plan["candidate"])),
    )
    assert fates == {
        "on-master": (
            master,
            f"follows the master: moves to {candidate} from its own position once it sees {master} read-only; "
            f"subscribed to {master} alone: goes on there, {master} replicating {candidate}'s commits to it",
        ),
        "on-candidate": (candidate, f"unchanged: {candidate} becomes the master"),
        "x": (other, f"unchanged: {other} replicates from {candidate} afterwards"),
    }, plan["consumers"]
    assert plan["consumers_note"] == (
        "Only the consumers connected now are known, and a server cannot tell one that follows the master (it moves "
        f"to {candidate} by itself) from one subscribed to it alone."
    )
