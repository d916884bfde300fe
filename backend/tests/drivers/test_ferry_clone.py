"""The ferry driver's rebuild (`rebuild_from`, ferryd's clone) on three real ferryd nodes: the recipient (a stopped,
read-only replica) copies the donor (the other replica) while the master takes writes, reports its progress, and
then replicates from the copy's position to the master's checksums; throttle and pause changes are followed while it
copies; cancelling the call leaves the node marked, read-only, refusing to replicate or to become writable; a failed
clone is the driver's `clone_failed` with the node's message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ferry_control.drivers.base import CopyProgress, CopyThrottle, RebuildSource
from ferry_control.drivers.errors import DriverError, ErrorKind, ServerBadRequest, ServerConflict
from ferry_control.drivers.factory import DriverFactory
from ferry_control.drivers.ferry import FerryDriver
from ferry_control.models import ServerKind
from tests.ferryd_cluster import FerrydCluster, free_port
from tests.mariadb_cluster import eventually

#: The smallest chunks the donor sends (1 KiB), so that a throttled copy takes many of them.
CHUNK_ARGS = ("--clone-chunk-bytes", "1024")
#: About 60 KB of rows (each some 30 bytes of chunk), written in transactions of ROWS_PER_TRANSACTION.
ROWS = 2000
ROWS_PER_TRANSACTION = 500
#: About 1 KB/s: a throttled copy takes its first chunk within a second or so and would need a minute for all of
#: them, so a pause or a cancel sent once bytes arrived always lands while it copies, however slow the machine
#: (the tests lift the throttle once they saw what they wait for).
THROTTLE_MB_S = 0.001


@pytest.fixture
async def drivers(settings):  # type: ignore[no-untyped-def]
    factory = DriverFactory(settings)
    yield factory
    await factory.aclose()


def quiesced_recipient(cluster: FerrydCluster) -> None:
    """Rows on the master, level everywhere; then the second replica stopped and read-only (a rebuild's recipient)."""
    for first in range(0, ROWS, ROWS_PER_TRANSACTION):
        cluster.master.increment_keys("t", [f"k{i:04}" for i in range(first, min(first + ROWS_PER_TRANSACTION, ROWS))])
    cluster.converge()
    cluster.replica2.post("/v1/replication/main/stop", {})
    cluster.replica2.post("/v1/read-only", {"read_only": True})


def driver_of(drivers: DriverFactory, admin: str) -> FerryDriver:
    driver = drivers.for_address(ServerKind.ferry, admin)
    assert isinstance(driver, FerryDriver)
    return driver


def tables(checksums: dict[str, Any]) -> dict[str, Any]:
    """A node's `GET /v1/checksums` tables that hold rows."""
    return {name: sum_ for name, sum_ in checksums["tables"].items() if sum_["rows"]}


async def test_rebuild_from_copies_under_writes_reports_progress_and_replicates_after(
    drivers: DriverFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    cluster = ferryd_factory(extra_args=CHUNK_ARGS)
    quiesced_recipient(cluster)
    recipient = driver_of(drivers, cluster.replica2.admin)
    donor = driver_of(drivers, cluster.replica1.admin)
    writing = asyncio.Event()
    stop = asyncio.Event()

    async def load() -> int:
        n = 0
        while not stop.is_set():
            await asyncio.to_thread(cluster.master.increment, "t", f"k{n % ROWS:04}")
            n += 1
            writing.set()
        return n

    writer = asyncio.create_task(load())
    await writing.wait()
    seen: list[CopyProgress] = []
    done = await recipient.rebuild_from(RebuildSource(driver=donor), throttle=CopyThrottle(), on_progress=seen.append)
    stop.set()
    assert await writer > 0
    assert done.phase == "done" and done.position, done
    assert done.bytes_total is not None and done.bytes_done == done.bytes_total > 0, done
    assert seen and seen[-1] == done, seen
    status = cluster.replica2.status()
    assert status["gtid_slave_pos"] == done.position == status["gtid_binlog_pos"], status
    assert status["clone_incomplete"] is None and status["read_only"] is True, status

    await recipient.start_replication("main")
    cluster.replica2.wait_for(cluster.master.status()["gtid_binlog_pos"])
    assert tables(cluster.replica2.get("/v1/checksums")) == tables(cluster.master.get("/v1/checksums"))


async def test_throttle_and_pause_changes_are_followed_while_the_copy_runs(
    drivers: DriverFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    cluster = ferryd_factory(extra_args=CHUNK_ARGS)
    quiesced_recipient(cluster)
    recipient = driver_of(drivers, cluster.replica2.admin)
    throttle = CopyThrottle(mb_s=THROTTLE_MB_S)
    seen: list[CopyProgress] = []
    copy = asyncio.create_task(
        recipient.rebuild_from(
            RebuildSource(driver=driver_of(drivers, cluster.replica1.admin)), throttle=throttle, on_progress=seen.append
        )
    )
    await eventually("the copy to take bytes", lambda: next((p for p in seen if p.bytes_done > 0), None))
    throttle.paused = True
    paused = await eventually("the copy to report it paused", lambda: next((p for p in seen if p.paused), None))
    assert cluster.replica2.get("/v1/clone")["paused"] is True
    assert paused.phase == "copying" and paused.bytes_total is not None
    throttle.paused, throttle.mb_s = False, None
    done = await copy
    assert done.phase == "done" and done.bytes_done == done.bytes_total
    assert tables(cluster.replica2.get("/v1/checksums")) == tables(cluster.replica1.get("/v1/checksums"))


async def test_cancelling_the_rebuild_leaves_the_node_marked_read_only_and_not_replicating(
    drivers: DriverFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    cluster = ferryd_factory(extra_args=CHUNK_ARGS)
    quiesced_recipient(cluster)
    recipient = driver_of(drivers, cluster.replica2.admin)
    seen: list[CopyProgress] = []
    copy = asyncio.create_task(
        recipient.rebuild_from(
            RebuildSource(driver=driver_of(drivers, cluster.replica1.admin)),
            throttle=CopyThrottle(mb_s=THROTTLE_MB_S),
            on_progress=seen.append,
        )
    )
    await eventually("the copy to take bytes", lambda: next((p for p in seen if p.bytes_done > 0), None))
    copy.cancel()
    with pytest.raises(asyncio.CancelledError):
        await copy
    clone = cluster.replica2.get("/v1/clone")
    assert clone["state"] == "cancelled" and clone["bytes_done"] < clone["bytes_total"], clone
    status = cluster.replica2.status()
    assert status["clone_incomplete"]["state"] == "cancelled" and status["read_only"] is True, status
    assert not any(c["running"] for c in status["replication"]), status
    with pytest.raises(ServerConflict) as refused:
        await recipient.start_replication("main")
    assert refused.value.code == "clone_incomplete" and clone["clone_id"] in str(refused.value)
    with pytest.raises(ServerConflict) as refused:
        await recipient.set_read_only(False)
    assert refused.value.code == "clone_incomplete"


async def test_a_failed_rebuild_is_a_driver_error_with_the_nodes_message(
    drivers: DriverFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    cluster = ferryd_factory()
    cluster.replica2.post("/v1/replication/main/stop", {})
    cluster.replica2.post("/v1/read-only", {"read_only": True})
    recipient = driver_of(drivers, cluster.replica2.admin)
    nowhere = driver_of(drivers, cluster.replica1.admin)
    nowhere.protocol_address = f"127.0.0.1:{free_port()}"
    seen: list[CopyProgress] = []
    with pytest.raises(DriverError) as failed:
        await recipient.rebuild_from(RebuildSource(driver=nowhere), throttle=CopyThrottle(), on_progress=seen.append)
    assert failed.value.code == "clone_failed" and failed.value.kind == ErrorKind.failed, failed.value
    assert f"connecting to the donor {nowhere.protocol_address}" in str(failed.value)
    assert cluster.replica2.status()["clone_incomplete"]["state"] == "failed"
    donor = RebuildSource(driver=driver_of(drivers, cluster.replica1.admin))
    with pytest.raises(ServerBadRequest, match="throttle_mb_s 0 is not a rate"):
        await recipient.rebuild_from(donor, throttle=CopyThrottle(mb_s=0), on_progress=seen.append)
    with pytest.raises(ServerConflict) as refused:
        await recipient.rebuild_from(donor, throttle=CopyThrottle(), on_progress=seen.append, resume=True)
    assert refused.value.code == "other_donor", refused.value
