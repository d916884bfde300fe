"""Two instances never repair the same operation: an operation's compensation (its undo or roll forward) moves
servers only while the cluster's lock is its own with its fencing token. Against real three-node ferryd clusters
and PostgreSQL, a switchover is stopped with its old master read-only, and then
- the lock was taken since and released (a reconcile's take-over, repair and release: a newer token on a free
  lock): the operation does not take it back, and its undo does not run over the repaired topology;
- the lock cannot be confirmed (a database error, injected): nothing is moved — it fails closed;
- a renewal of the lease fails while the undo runs (taken over, or a database error): the undo stops there, and
  the operation says what it left."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from ferry_control.core.db import session_scope
from ferry_control.models import OperationLock
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.services.orchestrator import switchover
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster
from tests.helpers import WAIT_S, register
from tests.operations.test_operation_guard import Gate, ended, start_switchover


def database_down(*_: Any, **__: Any) -> Any:
    raise OperationalError("SELECT … FOR UPDATE", {}, ConnectionRefusedError("injected: the database is away"))


async def lock_of(live: Any, cluster_id: int) -> tuple[int | None, int]:
    async with session_scope(live.app.state.sessionmaker) as session:
        lock = (await session.execute(select(OperationLock).where(OperationLock.cluster_id == cluster_id))).scalar_one()
        return lock.operation_id, lock.fencing_token


async def take_repair_and_release(live: Any, cluster_id: int) -> int:
    """What another instance's reconcile leaves: it took the lock (a newer token), repaired, and released it."""
    async with session_scope(live.app.state.sessionmaker) as session:
        await session.execute(
            update(OperationLock)
            .where(OperationLock.cluster_id == cluster_id)
            .values(operation_id=None, fencing_token=OperationLock.fencing_token + 1)
        )
    return (await lock_of(live, cluster_id))[1]


class UndoGate:
    """Replaces `switchover.undo`: it stops at its start until opened (then the real undo runs), so the test can
    act while the compensation holds the lock; `ran` says whether the real undo ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()
        self.ran = False
        real = switchover.undo

        async def gated(*args: Any, **kwargs: Any) -> None:
            self.entered.set()
            await self.opened.wait()
            self.ran = True
            await real(*args, **kwargs)

        monkeypatch.setattr(switchover, "undo", gated)


async def test_a_stopped_operation_never_takes_back_a_lock_taken_since(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reconcile took the lock for a newer token, repaired and released it while this instance was paused: the
    heartbeat stops the operation, and its undo does not take the free lock back over the newer token."""
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    undo = UndoGate(monkeypatch)
    undo.opened.set()
    async with live_app(operation_lease_s=1.5) as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        await gate.reached()
        token = await take_repair_and_release(live, cluster_id)
        operation = await ended(live, cluster_id, operation_id)
        assert await lock_of(live, cluster_id) == (None, token), "the lock was taken back over a newer token"
    assert not undo.ran, "the undo ran over what the lock's newer holder had repaired"
    assert operation["state"] == "failed", operation
    done = operation["result"]["undo"]["done"]
    assert "not done by this instance" in done and f"fencing token {token}" in done, done
    assert ferryd.master.status()["read_only"] is True, "the old master is left as the newer holder left it"


async def test_a_compensation_that_cannot_confirm_its_lock_moves_nothing(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    undo = UndoGate(monkeypatch)
    undo.opened.set()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        await gate.reached()
        monkeypatch.setattr(ClusterRepository, "lock_for_operation", database_down)
        live.app.state.runner._tasks[operation_id].cancel()  # the instance shuts down: its guard compensates
        operation = await ended(live, cluster_id, operation_id)
    assert not undo.ran, "the undo ran without its lock confirmed"
    assert operation["state"] == "failed", operation
    done = operation["result"]["undo"]["done"]
    assert "could not be confirmed" in done and "injected: the database is away" in done, done
    assert ferryd.master.status()["read_only"] is True


@pytest.mark.parametrize("renewal", ["taken over", "database error"])
async def test_a_failed_renewal_stops_the_undo_and_says_what_it_left(
    renewal: str,
    live_app: LiveFactory,
    ferryd_factory: Callable[..., FerrydCluster],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The undo waits at its start (its lock held, renewed every 0.5 s); a renewal fails meanwhile. The undo is
    stopped before it moves anything, and the operation's record says so, loudly."""
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    undo = UndoGate(monkeypatch)
    async with live_app(operation_lease_s=1.5) as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        await gate.reached()
        live.app.state.runner._tasks[operation_id].cancel()
        async with asyncio.timeout(WAIT_S):
            await undo.entered.wait()
        try:
            if renewal == "taken over":
                async with session_scope(live.app.state.sessionmaker) as session:
                    await session.execute(
                        update(OperationLock)
                        .where(OperationLock.cluster_id == cluster_id)
                        .values(fencing_token=OperationLock.fencing_token + 1)
                    )
            else:
                monkeypatch.setattr(ClusterRepository, "renew_lease", database_down)
            operation = await ended(live, cluster_id, operation_id)
        finally:
            undo.opened.set()  # had the undo not been stopped, it goes on now (and the app can shut down)
    assert not undo.ran, "the undo went on after its lock was lost"
    assert operation["state"] == "failed", operation
    done = operation["result"]["undo"]["done"]
    why = "another holder took the cluster's operation lock" if renewal == "taken over" else "could not be renewed"
    assert "undo stopped part-way" in done and why in done, done
    assert "the rest is left as it is" in done, done
    assert operation["result"]["undo"]["complete"] is False
    assert ferryd.master.status()["read_only"] is True
