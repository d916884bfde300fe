"""The control plane and change consumers, against real ferryd nodes: the ferry driver reads a node's consumers (its
status and GET /v1/consumers) with their position and lag; the API shows a server's consumers read from it now (404,
409 for a server that does not answer); a switchover's plan, a failover's dry run and a failover drill's dry run name
each consumer of the servers they move and what the move does to its stream, saying what the servers cannot know —
a dead master's consumers, which cannot be listed, said plainly."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from ferry_control.core.config import Settings
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.ferry_subscription import Subscription
from ferry_control.models import ServerKind
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import finished, register, run_operation
from tests.waiting import eventually

CONSUMER_TOKEN = "test-consumer-token-0123456789"


def with_consumers(
    tmp_path: Path, ferryd_factory: Callable[..., FerrydCluster], *, read_only_replicas: bool = False
) -> FerrydCluster:
    """Three nodes (a master and two replicas) that accept change consumers with `CONSUMER_TOKEN`."""
    token = tmp_path / "consumer-token"
    token.write_text(CONSUMER_TOKEN)
    return ferryd_factory(("--consumer-token-file", str(token)), read_only_replicas=read_only_replicas)


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


@asynccontextmanager
async def one_consumer_on_each(ferryd: FerrydCluster) -> AsyncIterator[None]:
    """A consumer subscribed on each node and past its first change: "on-master", "on-candidate" (replica1), "x"
    (replica2); all closed at the end."""
    opened = [
        await Subscription.open(node.listen, token=CONSUMER_TOKEN, name=name, start="")
        for node, name in ((ferryd.master, "on-master"), (ferryd.replica1, "on-candidate"), (ferryd.replica2, "x"))
    ]
    try:
        for sub in opened:
            await anext(sub)
        yield
    finally:
        for sub in opened:
            await sub.close()


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
        async with one_consumer_on_each(ferryd):
            operation = await run_operation(
                live.app, live.client, cluster_id, "switchover",
                {"candidate_registered_server_id": ids["replica1"], "dry_run": True},
            )  # fmt: skip
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


MASTER, REPLICA1, REPLICA2 = "master (server_id 1)", "replica1 (server_id 2)", "replica2 (server_id 3)"


async def test_a_failover_dry_run_names_the_replicas_consumers_and_says_a_dead_masters_cannot_be_listed(
    live_app: LiveFactory, tmp_path: Path, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = with_consumers(tmp_path, ferryd_factory)
    ferryd.master.increment(domain=1)
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        async with one_consumer_on_each(ferryd):
            await live.app.state.collector.run_cycle()  # the master's label names its server_id once it was read
            ferryd.master.kill()
            replicas = (ferryd.replica1, ferryd.replica2)
            await eventually(
                "both replicas to lose the killed master",
                lambda: all(n.status()["replication"][0]["io_state"] != "connected" for n in replicas),
                in_thread=True,
            )
            operation = await run_operation(
                live.app, live.client, cluster_id, "failover",
                {"candidate_registered_server_id": ids["replica1"], "dry_run": True},
            )  # fmt: skip
    assert (operation["state"], operation["dry_run"]) == ("succeeded", True), operation["error"]
    result = operation["result"]
    fates = {c["name"]: (c["server"], c["afterwards"]) for c in result["consumers"]}
    assert fates == {
        "on-candidate": (REPLICA1, f"unchanged: {REPLICA1} becomes the master"),
        "x": (REPLICA2, f"unchanged: {REPLICA2} replicates from {REPLICA1} afterwards"),
    }, result["consumers"]
    note = result["consumers_note"]
    assert note.startswith(f"{MASTER} does not answer ("), note
    assert (
        "): its consumers cannot be listed, so none listed here does not mean none. One that follows the master moves "
        f"to {REPLICA1} from its own position once it finds {REPLICA1} writable; one subscribed to {MASTER} alone "
        f"receives nothing until {MASTER} answers again and rejoins as a replica of {REPLICA1}."
    ) in note, note
    assert f"is refused when it subscribes to {REPLICA1} (REPLICA_AHEAD or DIVERGED, naming the domain)" in note, note
    assert "Consumers not known" not in note, "the dead master is said once, plainly"


async def test_a_failover_drill_dry_run_names_the_consumers_of_the_master_it_would_fence(
    live_app: LiveFactory, tmp_path: Path, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = with_consumers(tmp_path, ferryd_factory, read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        opened = [
            await Subscription.open(node.listen, token=CONSUMER_TOKEN, name=name, start="")
            for node, name in ((ferryd.master, "on-master"), (ferryd.replica2, "x"))
        ]
        try:
            for sub in opened:
                await anext(sub)
            response = await live.client.post(
                f"/api/v1/clusters/{cluster_id}/drills/dry-run",
                json={
                    "kind": "failover",
                    "candidate_strategy": "fixed",
                    "candidate_registered_server_id": ids["replica1"],
                },
            )
            assert response.status_code == 202, response.text
            operation = await finished(live.app, live.client, cluster_id, response.json()["id"])
        finally:
            for sub in opened:
                await sub.close()
    assert (operation["type"], operation["state"]) == ("drill", "succeeded"), operation["error"]
    result = operation["result"]
    fates = {c["name"]: (c["server"], c["afterwards"]) for c in result["consumers"]}
    assert fates == {
        "on-master": (
            MASTER,
            f"follows the master: moves to {REPLICA1} from its own position once it sees {MASTER} read-only; "
            f"subscribed to {MASTER} alone: receives nothing new while {MASTER} is fenced, then {REPLICA1}'s commits "
            f"once {MASTER} rejoins as its replica",
        ),
        "x": (REPLICA2, f"unchanged: {REPLICA2} replicates from {REPLICA1} afterwards"),
    }, result["consumers"]
    assert result["consumers_note"] == (
        "Only the consumers connected now are known, and a server cannot tell one that follows the master (it moves "
        f"to {REPLICA1} by itself) from one subscribed to it alone."
    ), "a live fence loses nothing: no word of refusals"
