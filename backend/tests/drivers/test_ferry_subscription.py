"""The Python change subscription against real ferryd nodes: each committed transaction once, with its row images and
the position to store; a subscription from a stored position continues exactly after it; following the master
across a switchover done through the admin API while a writer runs, every transaction once in each domain's order,
also for a consumer that restarts from its stored positions; bad arguments and refusals are precise."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from ferry_control.core.gtid import GtidParseError, parse_gtid
from ferry_control.drivers.ferry_protocol import (
    FerryProtocolClient,
    Increment,
    ProtocolRefused,
    StreamHeartbeat,
)
from ferry_control.drivers.ferry_subscription import Change, MasterSubscription, Subscription, advance
from tests.ferryd_cluster import NODE_TOKEN, WAIT_S, FerrydNode
from tests.waiting import eventually

CONSUMER_TOKEN = "test-consumer-token-0123456789"


def consumer_node(root: Path, server_id: int, *extra: str) -> FerrydNode:
    """A node that accepts change consumers with `CONSUMER_TOKEN`."""
    root.mkdir(parents=True, exist_ok=True)
    token = root / "consumer-token"
    token.write_text(CONSUMER_TOKEN)
    node = FerrydNode(root, server_id, ("--consumer-token-file", str(token), *extra))
    node.start()
    return node


@pytest.fixture
def node(tmp_path: Path) -> Iterator[FerrydNode]:
    n = consumer_node(tmp_path / "n", 1)
    yield n
    n.stop()


@pytest.fixture
async def writer(node: FerrydNode) -> AsyncIterator[FerryProtocolClient]:
    client = await FerryProtocolClient.connect(node.listen)
    yield client
    await client.close()


async def test_a_subscription_hands_out_each_change_with_its_position_and_resumes_exactly_after_it(
    node: FerrydNode, writer: FerryProtocolClient
) -> None:
    first = [
        await writer.transact([Increment("ledger", f"acct{i}", "balance", 10 + i)], domain=1 + i % 2) for i in range(3)
    ]
    async with await Subscription.open(node.listen, token=CONSUMER_TOKEN, name="cache", start="") as sub:
        assert sub.position == ""
        got = [await anext(sub) for _ in range(3)]
    assert [c.gtid for c, _ in got] == [c.gtid for c in first]
    change, position = got[2]
    assert isinstance(change, Change)
    assert (change.domain, change.commit_id, change.commit_ts_us) == (1, first[2].commit_id, first[2].commit_ts_us)
    (row,) = change.rows
    assert (row.table, row.key, row.before, row.after) == ("ledger", "acct2", None, {"balance": 12})
    assert await writer.get("ledger", "acct2") == row.after, "the row image is the data"
    assert position == f"{first[2].gtid},{first[1].gtid}", "one GTID per domain, just after the change"

    # Stored with the application's data, the position resumes exactly after the last change handled.
    stored = got[1][1]
    later = await writer.transact([Increment("ledger", "acct0", "balance", 1)], domain=2)
    async with await Subscription.open(node.listen, token=CONSUMER_TOKEN, name="cache", start=stored) as again:
        assert again.position == stored
        resumed = [(await anext(again))[0].gtid for _ in range(2)]
        assert resumed == [first[2].gtid, later.gtid]
        assert isinstance(await again.next_update(), StreamHeartbeat), "nothing more: nothing repeated"
        assert again.position == advance(position, later.gtid) == f"{first[2].gtid},{later.gtid}"

    # Only some domains: only theirs, and a position naming only them.
    async with await Subscription.open(node.listen, token=CONSUMER_TOKEN, name="two", start="", domains=[2]) as two:
        assert [(await anext(two))[0].gtid for _ in range(2)] == [first[1].gtid, later.gtid]
        assert two.position == later.gtid


async def test_bad_subscriptions_are_refused_precisely(node: FerrydNode) -> None:
    with pytest.raises(GtidParseError) as bad:
        await Subscription.open(node.listen, token=CONSUMER_TOKEN, name="c", start="1-1-x")
    assert bad.value.column == 5, bad.value
    with pytest.raises(ValueError, match="heartbeat_s=0.001"):
        await Subscription.open(node.listen, token=CONSUMER_TOKEN, name="c", heartbeat_s=0.001)
    with pytest.raises(ProtocolRefused) as refused:
        await Subscription.open(node.listen, token="not-the-consumer-token", name="c")
    assert refused.value.name == "PERMISSION_DENIED", refused.value
    with pytest.raises(ProtocolRefused) as refused:
        await Subscription.open(node.listen, token=CONSUMER_TOKEN, name="bad name")
    assert (refused.value.name, "' ' at byte 3" in refused.value.message) == ("INVALID_REQUEST", True)
    node.increment()  # 0-1-1: the node has domain 0 up to seq_no 1
    with pytest.raises(ProtocolRefused) as refused:
        await Subscription.open(node.listen, token=CONSUMER_TOKEN, name="c", start="0-1-5")
    assert refused.value.name == "REPLICA_AHEAD", refused.value
    with pytest.raises(ValueError, match="no node to follow"):
        MasterSubscription([" "], token=CONSUMER_TOKEN, name="c")


async def write_ledger(nodes: list[str], stop: asyncio.Event) -> list[str]:
    """Increments accounts in domains 1 and 2 in turn on whichever node takes writes, until `stop`; returns the
    GTIDs it was answered with. A read-only refusal moves it to the other node (a short pause between tries while
    neither takes writes: a switchover's window)."""
    acknowledged: list[str] = []
    at, i = 0, 0
    client = await FerryProtocolClient.connect(nodes[at])
    try:
        while not stop.is_set():
            try:
                commit = await client.transact([Increment("ledger", f"acct{i % 5}", "balance", 1)], domain=1 + i % 2)
            except ProtocolRefused as e:
                assert e.name == "READ_ONLY", e
                await client.close()
                at = (at + 1) % len(nodes)
                client = await FerryProtocolClient.connect(nodes[at])
                await asyncio.sleep(0.005)  # the workload's pace while no node takes writes, not a test's wait
                continue
            acknowledged.append(commit.gtid)
            i += 1
    finally:
        await client.close()
    return acknowledged


def switchover(old: FerrydNode, new: FerrydNode, old_name: str, new_name: str) -> None:
    """Through the admin API: the old master read-only once its commits in flight are answered, the candidate level
    with it and promoted, the old master following it."""
    position = old.post("/v1/read-only", {"read_only": True, "wait_for_in_flight_ms": 30_000})["gtid_binlog_pos"]
    new.wait_for(position)
    removed = httpx.delete(
        f"http://{new.admin}/v1/replication/{old_name}",
        headers={"Authorization": f"Bearer {NODE_TOKEN}"},
        timeout=WAIT_S,
    )
    assert removed.status_code == 200, removed.text
    new.post("/v1/read-only", {"read_only": False})
    old.post(f"/v1/replication/{new_name}/change-master", {"master": new.listen, "use_gtid": "current_pos"})
    old.post(f"/v1/replication/{new_name}/start", {})


def by_domain(gtids: list[str]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for g in gtids:
        out.setdefault(parse_gtid(g).domain, []).append(g)
    return out


async def test_following_the_master_across_a_switchover_gets_each_transaction_once_also_after_restarts(
    tmp_path: Path,
) -> None:
    a = consumer_node(tmp_path / "a", 1)
    b = consumer_node(tmp_path / "b", 2, "--read-only")
    tasks: list[asyncio.Task[object]] = []
    try:
        b.replicate_from(a, "a")
        nodes = [a.listen, b.listen]
        stop = asyncio.Event()
        writer = asyncio.create_task(write_ledger(nodes, stop))
        whole: list[Change] = []
        followed: list[str | None] = []

        async def follow_whole() -> None:
            async with MasterSubscription(nodes, token=CONSUMER_TOKEN, name="whole", start="", role_check_s=0.2) as m:
                async for change, _ in m:
                    whole.append(change)
                    if not followed or followed[-1] != m.node:
                        followed.append(m.node)

        parts: list[Change] = []
        restarts = 0

        async def follow_restarting() -> None:
            # Stops after every 40 changes and starts again from the position it stored with them.
            nonlocal restarts
            stored = ""
            while True:
                async with MasterSubscription(nodes, token=CONSUMER_TOKEN, name="restarting", start=stored) as m:
                    async for change, position in m:
                        parts.append(change)
                        stored = position
                        if len(parts) % 40 == 0:
                            break
                restarts += 1

        tasks = [asyncio.create_task(follow_whole()), asyncio.create_task(follow_restarting())]
        await eventually("both consumers under way", lambda: len(whole) > 60 and len(parts) > 60)
        await asyncio.to_thread(switchover, a, b, "a", "b")
        await eventually("following the new master", lambda: followed[-1] == b.listen)
        moved = len(whole)
        await eventually("changes from the new master", lambda: len(whole) > moved + 60)
        stop.set()
        acknowledged = await writer
        expected = by_domain(acknowledged)
        await eventually("every transaction received", lambda: len(whole) >= len(acknowledged) <= len(parts))
        for name, got in (("whole", whole), ("restarting", parts)):
            assert len(got) == len(acknowledged), f"{name}: nothing repeated"
            assert by_domain([c.gtid for c in got]) == expected, f"{name}: each domain once, in order"
        assert restarts >= 3, restarts
        last = {c.rows[0].key: c.rows[0].after for c in whole}
        async with await FerryProtocolClient.connect(b.listen) as reader:
            for key, image in last.items():
                assert await reader.get("ledger", key) == image, key
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        a.stop()
        b.stop()
