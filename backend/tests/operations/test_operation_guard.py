"""Operations always end well, in-process, against real three-node ferryd clusters: a switchover stopped after the
old master went read-only — by cancellation, by an unexpected exception, by its time bound — is undone: the old
master writable again, the topology as before, the undo recorded; one stopped by the loss of the cluster's lock (the
heartbeat sees another fencing token; or the check before the next step does, once the last confirmation is older
than the trust it is given) leaves the repair to the lock's newer holder; one stopped after the promotion is rolled
forward. Repointing keeps each replica's own connection settings (delay, parallel apply), in a switchover, in its
undo after the promotion began, and in a repoint operation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from ferry_control.core.db import session_scope
from ferry_control.drivers.errors import DriverError
from ferry_control.drivers.ferry import FerryDriver
from ferry_control.models import OperationLock
from ferry_control.repositories.clusters import ClusterRepository
from ferry_control.services.orchestrator import actions, switchover
from ferry_control.services.orchestrator.gtid import position
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster, FerrydNode
from tests.helpers import WAIT_S, register, run_operation, step, topology, writable_master
from tests.waiting import eventually

#: Parallel apply settings given to a replica's connection, to be kept through repoints.
PARALLEL = {"mode": "conservative", "workers": 4, "domain_workers_max": 2}


class Gate:
    """Replaces `actions.wait_reached` (the candidate's catch-up): the switchover stops there, the old master
    already read-only, until the test opens the gate (then the real wait runs) — or the operation is stopped."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, raises: BaseException | None = None):
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()
        self.raises = raises
        real = actions.wait_reached

        async def gated(*args: Any, **kwargs: Any) -> actions.Reached:
            self.entered.set()
            if self.raises is not None:
                raise self.raises
            await self.opened.wait()
            return await real(*args, **kwargs)

        monkeypatch.setattr(actions, "wait_reached", gated)

    async def reached(self) -> None:
        async with asyncio.timeout(WAIT_S):
            await self.entered.wait()


def configure(node: FerrydNode, master: FerrydNode, **settings: Any) -> None:
    """Gives the node's connection `main` its own settings (it keeps replicating from `master`)."""
    node.post("/v1/replication/main/stop", {})
    body = {"master": master.listen}
    parallel = settings.pop("parallel", None)
    if parallel:
        body.update(parallel_mode=parallel["mode"], workers=parallel["workers"],
                    domain_workers_max=parallel["domain_workers_max"])  # fmt: skip
    node.post("/v1/replication/main/change-master", {**body, **settings})
    node.post("/v1/replication/main/start", {})


def connection(node: FerrydNode, name: str = "main") -> dict[str, Any]:
    return next(c for c in node.status()["replication"] if c["name"] == name)


async def start_switchover(live: Any, cluster_id: int, candidate_id: int) -> int:
    response = await live.client.post(
        f"/api/v1/clusters/{cluster_id}/operations/switchover", json={"candidate_registered_server_id": candidate_id}
    )
    assert response.status_code == 202, response.text
    return response.json()["id"]


async def ended(live: Any, cluster_id: int, operation_id: int) -> dict[str, Any]:
    """Waits for the operation's task (whatever way it ends) and returns the operation as the API shows it."""
    task = live.app.state.runner._tasks.get(operation_id)
    if task is not None:
        async with asyncio.timeout(WAIT_S):
            await asyncio.wait([task])
    response = await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")
    assert response.status_code == 200, response.text
    operation = response.json()
    assert operation["state"] not in ("pending", "running"), operation
    return operation


def assert_undone_as_before(operation: dict[str, Any], ferryd: FerrydCluster, before: Any, why: str, kind: str) -> None:
    assert operation["state"] == "undone", (operation["error"], operation["steps"])
    assert operation["error"].startswith(why), operation["error"]
    failure = {"kind": kind, "changed": False, "left": [], "compensation": "undone"}
    assert operation["result"]["failure"] == failure, operation["result"]
    names = [s["name"] for s in operation["steps"]]
    assert names[-1] == "undo" and step(operation, "undo")["state"] == "passed", operation["steps"]
    assert step(operation, "old_master_read_only")["state"] == "passed"
    assert "promote_candidate" not in names
    assert operation["result"]["undo"]["complete"] is True
    assert topology(ferryd.nodes) == before
    assert writable_master(ferryd.nodes) is ferryd.master
    ferryd.master.increment("after_undo", "k", domain=1)


async def test_a_cancelled_switchover_is_undone(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = topology(ferryd.nodes)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        await gate.reached()
        assert ferryd.master.status()["read_only"], "the old master went read-only before the catch-up"
        live.app.state.runner._tasks[operation_id].cancel()
        operation = await ended(live, cluster_id, operation_id)
        assert_undone_as_before(
            operation, ferryd, before, "interrupted: the API instance running it shut down", "shutdown"
        )
        assert step(operation, "candidate_catch_up")["state"] == "failed"


async def test_an_unexpected_exception_is_undone(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    ferryd = ferryd_factory()
    Gate(monkeypatch, raises=RuntimeError("injected in the catch-up"))
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = topology(ferryd.nodes)
        operation_id = await start_switchover(live, cluster_id, ids["replica2"])
        operation = await ended(live, cluster_id, operation_id)
        assert_undone_as_before(
            operation, ferryd, before, "internal error: RuntimeError: injected in the catch-up", "internal"
        )
        assert step(operation, "candidate_catch_up")["detail"] == "RuntimeError: injected in the catch-up"


async def test_a_switchover_past_its_time_bound_is_stopped_and_undone(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    ferryd = ferryd_factory()
    Gate(monkeypatch)  # never opened: only the bound ends the wait
    async with live_app(operation_timeout_s=3.0) as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = topology(ferryd.nodes)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        operation = await ended(live, cluster_id, operation_id)
        assert_undone_as_before(
            operation, ferryd, before, "timed out: the operation ran longer than its bound of 3.0 s", "timed_out"
        )


async def steal_the_lock(live: Any, cluster_id: int) -> None:
    """Another holder takes the cluster's lock and frees it again: a newer fencing token (as a reconcile's take-over
    after a lapsed lease, its repair and its release leave it)."""
    async with session_scope(live.app.state.sessionmaker) as session:
        await session.execute(
            update(OperationLock)
            .where(OperationLock.cluster_id == cluster_id)
            .values(operation_id=None, fencing_token=OperationLock.fencing_token + 1)
        )


def assert_left_to_the_new_holder(operation: dict[str, Any], ferryd: FerrydCluster, why: str) -> None:
    """Stopped, and its undo not done here: the lock's newer holder repairs (test_operation_fencing.py)."""
    assert operation["state"] == "failed", (operation["error"], operation["steps"])
    assert operation["error"].startswith(why), operation["error"]
    failure = operation["result"]["failure"]
    assert (failure["kind"], failure["changed"], failure["compensation"]) == ("lock_lost", True, "undone"), failure
    [left] = failure["left"]
    assert "not done by this instance: the cluster's operation lock was taken since" in left, left
    assert "promote_candidate" not in [s["name"] for s in operation["steps"]]
    assert ferryd.master.status()["read_only"] is True


async def test_losing_the_lock_stops_the_switchover(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The heartbeat (every third of a 1.5 s lease) finds the lock taken over while the switchover waits."""
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    async with live_app(operation_lease_s=1.5) as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        await gate.reached()
        await steal_the_lock(live, cluster_id)
        operation = await ended(live, cluster_id, operation_id)
        assert_left_to_the_new_holder(
            operation, ferryd, "lost the cluster's operation lock: another holder took it over"
        )


async def test_the_fencing_token_is_checked_before_the_next_step(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a long lease the heartbeat does not look in time, and with no trust in the last confirmation the check
    before `promote_candidate` reads the lock: it finds it taken."""
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    async with live_app(operation_lease_s=600.0, operation_fence_trust_s=0) as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        await gate.reached()
        await steal_the_lock(live, cluster_id)
        gate.opened.set()
        operation = await ended(live, cluster_id, operation_id)
        assert_left_to_the_new_holder(operation, ferryd, "lost the cluster's operation lock: it is held by nobody")
        assert step(operation, "candidate_catch_up")["state"] == "passed"


async def test_steps_read_the_lock_only_once_their_last_confirmation_is_older_than_the_trust(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner reads the lock as the operation starts; the steps, within `operation_fence_trust_s` of that read,
    rely on it, so no database round trip lies inside the switchover's window. With no trust every step reads it."""
    reads: list[int] = []
    real = ClusterRepository.lock_state

    async def counted(self: ClusterRepository, cluster_id: int) -> Any:
        reads.append(cluster_id)
        return await real(self, cluster_id)

    monkeypatch.setattr(ClusterRepository, "lock_state", counted)
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]}
        )
        assert operation["state"] == "succeeded", operation["error"]
        assert [s["name"] for s in operation["steps"]][:1] == ["preflight"]
        assert len(operation["steps"]) > 4
        assert reads == [cluster_id], "one read, as the operation starts"
    reads.clear()
    async with live_app(operation_fence_trust_s=0) as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["master"]}
        )
        assert operation["state"] == "succeeded", operation["error"]
        assert len(reads) == 1 + len(operation["steps"]), "a read as it starts, and before every step"


async def test_the_steps_inside_the_window_are_published_and_written_once_the_candidate_takes_writes(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the old master's read-only to the candidate's first write, a switchover records nothing: stopped inside
    that window (the candidate's catch-up), its row and its events show the read-only step still running and no
    later step; once it ends, every step of the window is there with its timings."""
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        async with live.app.state.bus.subscribe(cluster_id) as events:
            operation_id = await start_switchover(live, cluster_id, ids["replica1"])
            await gate.reached()
            assert ferryd.master.status()["read_only"] is True, "inside the window: the old master refuses writes"

            async def stored_steps() -> list[tuple[str, str]] | None:
                stored = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
                steps = [(s["name"], s["state"]) for s in stored["steps"]]
                return steps if any(name == "old_master_read_only" for name, _ in steps) else None

            steps = await eventually("the read-only step written", stored_steps)
            assert steps[-1] == ("old_master_read_only", "running"), f"written inside the window: {steps}"
            gate.opened.set()
            operation = await ended(live, cluster_id, operation_id)
            published: list[list[tuple[str, str]]] = []
            while not events.queue.empty():
                event = events.queue.get_nowait()
                if event.type == "operation" and event.data.operation_id == operation_id:
                    published.append([(s.name, s.state) for s in event.data.steps])
        assert operation["state"] == "succeeded", operation["error"]
        window = ("old_master_read_only", "wait_in_flight_commits", "candidate_catch_up", "promote_candidate")
        assert all(step(operation, name)["state"] == "passed" for name in window)
        assert all(step(operation, name)["duration_s"] is not None for name in window)
        newest = [steps[-1] for steps in published if steps]
        assert ("old_master_read_only", "running") in newest
        inside = [s for s in newest if s[0] in window[1:3] or s == ("old_master_read_only", "passed")]
        assert not inside, f"published inside the window: {inside}"


async def test_repointing_keeps_each_replicas_connection_settings(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """A delayed replica with parallel apply keeps both when a switchover repoints it, and when a repoint
    operation moves it again."""
    ferryd = ferryd_factory()
    configure(ferryd.replica2, ferryd.master, delay_s=2, parallel=PARALLEL)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation = await run_operation(
            live.app, live.client, cluster_id, "switchover", {"candidate_registered_server_id": ids["replica1"]}
        )
        assert operation["state"] == "succeeded", (operation["error"], operation["steps"])
        moved = connection(ferryd.replica2)
        assert moved["master"] == ferryd.replica1.listen and moved["running"]
        assert (moved["delay_s"], moved["parallel"]) == (2, PARALLEL), moved

        repointed = await run_operation(
            live.app, live.client, cluster_id, "repoint",
            {"registered_server_id": ids["replica2"], "master_registered_server_id": ids["master"]},
        )  # fmt: skip
        assert repointed["state"] == "succeeded", (repointed["error"], repointed["steps"])
        moved = connection(ferryd.replica2)
        assert moved["master"] == ferryd.master.listen and moved["running"]
        assert (moved["delay_s"], moved["parallel"]) == (2, PARALLEL), moved


@pytest.mark.parametrize("took_writes", [False, True], ids=["took-no-write", "took-a-write"])
async def test_a_stop_once_the_candidate_is_writable_is_settled_by_what_it_took(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch,
    took_writes: bool,
) -> None:  # fmt: skip
    """The candidate is writable; then, as its connection to the old master is being cut, something fails
    unexpectedly (once, after the connection was really stopped, not yet removed). The guard fences the candidate and
    asks what it took: nothing — undone, the connection running again with the delay and parallel apply it had, the
    old master writable again; a client's write — rolled forward, the write kept on the new master every server then
    follows."""
    ferryd = ferryd_factory()
    configure(ferryd.replica1, ferryd.master, delay_s=1, parallel=PARALLEL)
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    real = FerryDriver.stop_replication
    injected: list[str] = []

    async def failing(self: FerryDriver, connection_name: str) -> None:
        await real(self, connection_name)
        if self.address == ferryd.replica1.admin and not injected:
            injected.append(connection_name)
            if took_writes:  # an application found the new master meanwhile
                injected.append(await asyncio.to_thread(ferryd.replica1.increment, "d1", "taken", domain=1))
            raise RuntimeError("injected after the promotion")

    monkeypatch.setattr(FerryDriver, "stop_replication", failing)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        before = topology(ferryd.nodes)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        operation = await ended(live, cluster_id, operation_id)
    assert step(operation, "promote_candidate")["state"] == "passed"
    assert step(operation, "candidate_leaves_old_master")["state"] == "failed"
    settled = step(operation, "settle")["detail"]
    if not took_writes:
        assert operation["state"] == "undone", (operation["error"], operation["steps"])
        assert operation["error"].startswith("internal error: RuntimeError: injected after the promotion; undone:")
        failure = {"kind": "internal", "changed": False, "left": [], "compensation": "undone"}
        assert operation["result"]["failure"] == failure, operation["result"]
        assert settled.startswith("replica1 (server_id 2) took no write"), settled
        assert topology(ferryd.nodes) == before
        restored = connection(ferryd.replica1)
        assert (restored["delay_s"], restored["parallel"]) == (1, PARALLEL), restored
        assert writable_master(ferryd.nodes) is ferryd.master
        return
    taken = injected[1]
    assert operation["state"] == "failed", (operation["error"], operation["steps"])
    assert "; rolled forward: " in operation["error"], operation["error"]
    failure = {"kind": "internal", "changed": True, "left": [], "compensation": "rolled_forward"}
    assert operation["result"]["failure"] == failure, operation["result"]
    assert settled.startswith(f"replica1 (server_id 2) took writes as the master ({taken} "), settled
    assert writable_master(ferryd.nodes) is ferryd.replica1
    domain, _, seq = (int(x) for x in taken.split("-"))

    def follows_and_holds(node: FerrydNode) -> bool:
        status = node.status()
        moved = [c["master"] for c in status["replication"]] == [ferryd.replica1.listen]
        held = position(status["gtid_current_pos"]).get(domain)
        return moved and held is not None and held.seq >= seq

    for node in (ferryd.master, ferryd.replica2):
        await eventually(f"node {node.server_id} to follow replica1 and hold {taken}",
                         lambda node=node: follows_and_holds(node))  # fmt: skip


async def test_a_switchover_cancelled_after_the_promotion_is_rolled_forward(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the point of no return the guard completes instead of undoing: the switchover is cancelled while it
    repoints the first replica; the roll forward repoints every server still following the old master."""
    ferryd = ferryd_factory()
    entered = asyncio.Event()
    real = actions.repoint
    calls = []

    async def first_blocks(*args: Any, **kwargs: Any) -> None:
        calls.append(args[2])
        if len(calls) == 1:
            entered.set()
            await asyncio.Event().wait()
        await real(*args, **kwargs)

    monkeypatch.setattr(actions, "repoint", first_blocks)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        async with asyncio.timeout(WAIT_S):
            await entered.wait()
        live.app.state.runner._tasks[operation_id].cancel()
        operation = await ended(live, cluster_id, operation_id)
        assert operation["state"] == "failed", (operation["error"], operation["steps"])
        error = operation["error"]
        assert error.startswith("interrupted: the API instance running it shut down; rolled forward: "), error
        failure = {"kind": "shutdown", "changed": True, "left": [], "compensation": "rolled_forward"}
        assert operation["result"]["failure"] == failure, operation["result"]
        assert step(operation, "promote_candidate")["state"] == "passed"
        assert step(operation, "repoint_replicas")["state"] == "failed"
        assert step(operation, "roll_forward")["state"] == "passed"
        new_master = ferryd.replica1

        def followed() -> bool:
            shape = topology(ferryd.nodes)
            return all(
                shape[n.server_id][1] == [("main", new_master.listen, True)] for n in (ferryd.master, ferryd.replica2)
            )

        await eventually("every server to follow the new master", followed, WAIT_S)
        assert writable_master(ferryd.nodes) is new_master
        assert topology(ferryd.nodes)[ferryd.master.server_id][0] is True, "the old master stays read-only"


async def test_an_undo_that_cannot_finish_says_so_and_the_operation_fails(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old master refuses to turn writable again: the operation ends failed (not undone), naming what is left."""
    ferryd = ferryd_factory()
    Gate(monkeypatch, raises=RuntimeError("injected in the catch-up"))
    real = FerryDriver.set_read_only

    async def refusing(self: FerryDriver, read_only: bool, *, confirm: bool = True) -> bool:
        if self.address == ferryd.master.admin and not read_only:
            raise DriverError(self.address, "injected", "read-only off refused")
        return await real(self, read_only, confirm=confirm)

    monkeypatch.setattr(FerryDriver, "set_read_only", refusing)
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        operation = await ended(live, cluster_id, operation_id)
        assert operation["state"] == "failed", (operation["error"], operation["steps"])
        assert operation["error"].startswith("internal error: RuntimeError: injected in the catch-up; undo incomplete:")
        assert "read-only off refused" in operation["error"]
        failure = operation["result"]["failure"]
        assert (failure["kind"], failure["changed"], failure["compensation"]) == ("internal", True, "undone"), failure
        assert len(failure["left"]) == 1 and "read-only off refused" in failure["left"][0], failure
        assert step(operation, "undo")["state"] == "failed"
        assert operation["result"]["undo"]["complete"] is False
        assert ferryd.master.status()["read_only"], "still read-only: the alert names it once the collector sees it"


async def test_a_failover_stopped_while_leveling_removes_its_temporary_connection(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither replica is ahead in every domain, so the candidate is leveled from its peer through a temporary
    connection; an unexpected exception while it waits there is undone: the temporary connection removed."""
    ferryd = ferryd_factory()
    old, first, second = ferryd.master, ferryd.replica1, ferryd.replica2
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    real = actions.wait_reached

    async def failing_in_leveling(*args: Any, **kwargs: Any) -> actions.Reached:
        if str(kwargs.get("connection") or "").startswith(actions.LEVEL_PREFIX):
            raise RuntimeError("injected while leveling")
        return await real(*args, **kwargs)

    monkeypatch.setattr(actions, "wait_reached", failing_in_leveling)
    async with live_app() as live:
        cluster_id, _ = await register(live.client, ferryd)
        for node in (first, second):
            node.post("/v1/replication/main/stop", {})
        position = ferryd.write(3, domains=(1, 2))
        newest = dict(g.split("-", 1) for g in position.split(","))
        first.post("/v1/replication/main/start", {"until": f"1-{newest['1']}"})
        second.post("/v1/replication/main/start", {"until": f"2-{newest['2']}"})
        await eventually(
            "both replicas at their UNTIL",
            lambda: all(n.status()["replication"][0]["sql_state"] == "until_reached" for n in (first, second)),
            WAIT_S,
        )
        old.kill()
        operation = await run_operation(live.app, live.client, cluster_id, "failover", {})
        assert operation["state"] == "undone", (operation["error"], operation["steps"])
        assert operation["error"].startswith("internal error: RuntimeError: injected while leveling; undone: ")
        assert "temporary connection 'level_" in operation["error"], operation["error"]
        names = [s["name"] for s in operation["steps"]]
        assert "undo" in names, operation["steps"]
        assert step(operation, "bring_level")["state"] == "failed" and step(operation, "undo")["state"] == "passed"
        assert "promote_candidate" not in [s["name"] for s in operation["steps"]]
        for node in (first, second):
            assert [c["name"] for c in node.status()["replication"]] == ["main"], node.status()["replication"]


async def test_an_operation_whose_lock_a_reconcile_took_over_leaves_the_repair_to_it(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its lease lapsed and another instance's reconcile took the cluster for the same operation (a new fencing
    token, as `Reconciler._reconcile` does): when the operation notices and stops, its own undo does not run — two
    instances never repair the same servers from two snapshots — and its result says who repairs."""
    ferryd = ferryd_factory()
    gate = Gate(monkeypatch)
    undos = []
    real_undo = switchover.undo

    async def counted_undo(*args: Any, **kwargs: Any) -> None:
        undos.append(args)
        await real_undo(*args, **kwargs)

    monkeypatch.setattr(switchover, "undo", counted_undo)
    async with live_app(operation_lease_s=1.5) as live:
        cluster_id, ids = await register(live.client, ferryd)
        operation_id = await start_switchover(live, cluster_id, ids["replica1"])
        await gate.reached()
        async with session_scope(live.app.state.sessionmaker) as session:  # the other instance's take-over
            await session.execute(
                update(OperationLock).where(OperationLock.cluster_id == cluster_id).values(
                    operation_id=operation_id, fencing_token=OperationLock.fencing_token + 1,
                    lease_expires_at=datetime.now(UTC) + timedelta(seconds=600))
            )  # fmt: skip
        task = live.app.state.runner._tasks.get(operation_id)
        assert task is not None
        async with asyncio.timeout(WAIT_S):
            await asyncio.wait([task])
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
    assert undos == [], "the undo ran although another holder had the cluster"
    assert operation["state"] == "failed", operation
    assert "not done by this instance" in operation["result"]["undo"]["done"], operation["result"]["undo"]
    assert ferryd.master.status()["read_only"] is True, "the old master is left for the reconcile to repair"
