"""Fault tests: the API as a real process (uvicorn) on its own migrated PostgreSQL database, SIGKILLed in the middle
of a switchover at each step in turn (the test hook FERRY_TEST_PAUSE_AFTER_STEP pauses the operation once that step
has ended and been recorded), then started again: its reconciler finds the operation left running once
the dead instance's lease lapsed, and finishes or undoes it. After each round the cluster has exactly one writable
master with every other server replicating from it, the operation is `interrupted` with what was found and done,
and the cluster's alerts name it; under a load writer that follows the master, no acknowledged transaction is
lost and none is applied twice.

Besides: the reconcile of a drill run left running (its run ends `interrupted` too), and the alert for a master
left read-only with no operation running."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from ferry_control.core.config import Settings, env_names
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.core.security import Role
from ferry_control.drivers.ferry_protocol import FerryProtocolClient
from ferry_control.models import DrillRun, Operation, OperationLock, OperationState
from ferry_control.services.orchestrator.gtid import position
from ferry_control.services.tokens import TokenService
from tests import conftest
from tests.api_forks import ApiForks, ForkedApi
from tests.conftest import TOKEN_PEPPER, LiveFactory, migrated_database
from tests.ferryd_cluster import NODE_TOKEN, FerrydCluster, FerrydNode, free_port
from tests.helpers import LOAD_FIELD, LOAD_TABLE, WAIT_S, LoadWriter, WebhookReceiver, register, serve, stop_process
from tests.waiting import eventually

BACKEND = Path(__file__).resolve().parents[2]
#: The switchover's steps once its preflight passed, each a point the API is killed after.
STEPS = [
    "catch_up_before_window", "pre_hooks", "old_master_read_only", "wait_in_flight_commits", "candidate_catch_up",
    "promote_candidate", "candidate_leaves_old_master", "repoint_replicas", "old_master_replicates", "verify",
]  # fmt: skip
#: Killed after these, the switchover is undone (the candidate was not promoted); after the others, completed.
#: After `promote_candidate` the candidate is writable but still replicates from the old master, and the load writer
#: writes only to a writable node that replicates from nobody: it took no write, so it is undone too
#: (`test_a_switchover_left_with_its_candidate_writable_is_settled_by_what_the_candidate_took` has both cases).
UNDONE_AFTER = {"catch_up_before_window", "pre_hooks", "old_master_read_only", "wait_in_flight_commits",
                "candidate_catch_up", "promote_candidate"}  # fmt: skip
#: A short lease: a dead instance's operation is reconciled about this long after its last renewal. The live instance
#: renews it every third of it, so it stops its own operation only after a stall of that long: 3 s leaves a busy
#: machine room (a second more per killed step, spent waiting).
LEASE_S = 3.0


def app_settings(database_url: str) -> dict[str, Any]:
    """The settings of the API under test (also the environment its process gets)."""
    fields: dict[str, Any] = {
        "environment": "test", "database_url": database_url, "token_pepper": TOKEN_PEPPER, "node_token": NODE_TOKEN,
        "collector_enabled": False, "drill_scheduler_enabled": False, "poll_timeout_s": 5.0,
        "node_read_retries_max": 0, "operation_lease_s": LEASE_S, "switchover_catch_up_timeout_s": 10.0,
        "verify_timeout_s": 30.0,
    }  # fmt: skip
    for name, constant in (
        ("secret_keys", "SECRET_KEY"), ("webhook_allowed_hosts", "LOOPBACK_WEBHOOKS"),
        ("server_trusted_hosts", "LOOPBACK_SERVERS"),
    ):  # fmt: skip
        if hasattr(conftest, constant):  # the settings the test apps need, where the suite defines them
            fields[name] = getattr(conftest, constant)
    return fields


class ApiProcess:
    """`uvicorn --factory ferry_control.main:create_app` as a process of its own (forked, tests/api_forks.py),
    configured through its settings' environment variables (FERRY_*, DATABASE_URL) and the test hooks'
    (FERRY_TEST_*)."""

    def __init__(self, settings: dict[str, Any], log_path: Path):
        self.settings = settings
        self.log_path = log_path
        self.process: ForkedApi | None = None
        self.base_url = ""

    async def start(self, *, pause_after_step: str | None = None, **overrides: Any) -> str:
        """Starts the API with its settings (`overrides` by flat name) and, given `pause_after_step`, the test hook
        that pauses every operation after that step."""
        assert self.process is None or self.process.poll() is not None, "already running"
        port = free_port()
        env = dict(os.environ)
        for name, value in {**self.settings, **overrides}.items():
            env[env_names(name)[0]] = value if isinstance(value, str) else json.dumps(value)
        env.pop("FERRY_TEST_PAUSE_AFTER_STEP", None)
        if pause_after_step is not None:
            env["FERRY_TEST_PAUSE_AFTER_STEP"] = pause_after_step
        # `uvicorn --factory ferry_control.main:create_app`, forked from a process that imported it once
        # (tests/api_forks.py says why and what the instance shares: nothing it made itself).
        self.process = ApiForks.shared().spawn(env, BACKEND, self.log_path, "127.0.0.1", port)
        self.base_url = f"http://127.0.0.1:{port}"

        # One client for every poll: a client per poll builds a TLS context each time, more CPU than the poll.
        async with httpx.AsyncClient(timeout=2.0, limits=httpx.Limits(max_keepalive_connections=0)) as client:

            async def healthy() -> bool:
                assert self.process is not None and self.process.poll() is None, self.log_path.read_text()
                try:
                    return (await client.get(f"{self.base_url}/api/v1/health")).status_code == 200
                except httpx.HTTPError:
                    return False

            await eventually("the API process to answer", healthy, WAIT_S)
        return self.base_url

    def kill(self) -> None:
        """SIGKILL: the instance dies at once, its lease unrenewed, its operation left `running`."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(WAIT_S)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, WAIT_S)


async def killed_after(
    api: ApiProcess, headers: dict[str, str], point: str, path: str, body: dict[str, Any]
) -> tuple[dict[str, Any], httpx.AsyncClient]:
    """Starts the API paused after step `point` of the operation POSTed to `path`, SIGKILLs it there, starts it again
    and waits for its reconciler to end the operation; returns the operation as it ended and a client of the
    running API (the caller closes it)."""
    base = await api.start(pause_after_step=point)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=WAIT_S) as client:
        response = await client.post(path, json=body)
        assert response.status_code == 202, response.text
        url = f"{path.rsplit('/', 1)[0]}/{response.json()['id']}"

        async def paused_after_point() -> bool:
            operation = (await client.get(url)).json()
            seen = [(s["name"], s["state"], s.get("detail")) for s in operation["steps"]]
            assert operation["state"] in ("pending", "running"), (point, operation["state"], operation["error"], seen)
            steps = operation["steps"]
            return bool(steps) and steps[-1]["name"] == point and steps[-1]["state"] != "running"

        await eventually(f"the operation to pause after {point}", paused_after_point, WAIT_S)
    api.kill()
    base = await api.start()
    client = httpx.AsyncClient(base_url=base, headers=headers, timeout=WAIT_S)

    async def reconciled() -> dict[str, Any] | None:
        operation = (await client.get(url)).json()
        return operation if operation["state"] != "running" else None

    return await eventually(f"the operation killed after {point} to be reconciled", reconciled, WAIT_S), client


@pytest.fixture
def fault_database(admin_database_url: str) -> Iterator[str]:
    yield from migrated_database(admin_database_url, "ferry_fault")


async def operator_token(settings: dict[str, Any]) -> str:
    engine = create_engine(Settings(**settings))
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            _, token = await TokenService(session, Settings(**settings)).create("fault-operator", Role.operator)
    finally:
        await engine.dispose()
    return token


def shape(nodes: list[FerrydNode]) -> tuple[list[int], dict[int, list[tuple[str, bool, str]]]]:
    """The writable nodes (server ids) and each node's connections (master, running, io state)."""
    statuses = {n.server_id: n.status() for n in nodes}
    writable = [i for i, s in statuses.items() if not s["read_only"]]
    connections = {
        i: [(c["master"], c["running"], c["io_state"]) for c in s["replication"]] for i, s in statuses.items()
    }
    return writable, connections


def one_master_followed(nodes: list[FerrydNode]) -> FerrydNode | None:
    """The one writable master when every other node replicates from it over one running, connected connection."""
    writable, connections = shape(nodes)
    if len(writable) != 1:
        return None
    master = next(n for n in nodes if n.server_id == writable[0])
    if connections[master.server_id]:
        return None
    others = [n for n in nodes if n is not master]
    if all(connections[n.server_id] == [(master.listen, True, "connected")] for n in others):
        return master
    return None


@pytest.mark.long(rank=1)
async def test_killing_the_api_at_each_step_of_a_switchover_ends_with_one_master_and_nothing_lost(
    fault_database: str, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)
    nodes = ferryd.nodes
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    settings = app_settings(fault_database)
    headers = {"Authorization": f"Bearer {await operator_token(settings)}"}
    api = ApiProcess(settings, tmp_path / "api.log")
    writer = await LoadWriter.start(nodes, clients=4, domains=2, rate=200.0)
    try:
        base = await api.start()
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=WAIT_S) as client:
            cluster_id, ids = await register(client, ferryd)
        node_of = {ids["master"]: ferryd.master, ids["replica1"]: ferryd.replica1, ids["replica2"]: ferryd.replica2}
        id_of = {node.server_id: server_id for server_id, node in node_of.items()}
        api.stop()
        acked_before = 0
        for point in STEPS:
            master = one_master_followed(nodes)
            assert master is not None, (point, shape(nodes))
            candidate = next(n for n in nodes if n is not master)
            operation, client = await killed_after(
                api, headers, point, f"/api/v1/clusters/{cluster_id}/operations/switchover",
                {"candidate_registered_server_id": id_of[candidate.server_id]},
            )  # fmt: skip
            try:
                assert operation["state"] == "interrupted", (point, operation)
                report = operation["result"]["reconciled"]
                assert report["problems"] == [], (point, report)
                assert operation["steps"][-1]["name"] == "reconcile", (point, operation["steps"])
                expected = master if point in UNDONE_AFTER else candidate
                # Typed: what the reconcile did, and that nothing was left half-done.
                failure = operation["result"]["failure"]
                if point in ("catch_up_before_window", "pre_hooks"):  # before it changed any server
                    assert (failure["kind"], failure["changed"], failure["compensation"]) == (
                        "interrupted", False, None), (point, failure, report)  # fmt: skip
                elif point in UNDONE_AFTER:
                    assert (failure["kind"], failure["changed"], failure["compensation"]) == (
                        "interrupted", False, "undone"), (point, failure, report)  # fmt: skip
                else:
                    assert (failure["kind"], failure["changed"], failure["compensation"]) == (
                        "interrupted", True, "rolled_forward"), (point, failure, report)  # fmt: skip
                assert failure["left"] == [], (point, failure)
                new_master = await eventually(
                    f"one master followed after {point}", lambda: one_master_followed(nodes), WAIT_S
                )
                assert new_master is expected, (point, new_master.server_id, report)
                topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
                alerts = [a for a in topology["alerts"] if a["kind"] == "operation_interrupted"]
                assert [a["operation_id"] for a in alerts] == [operation["id"]], topology["alerts"]
            finally:
                await client.aclose()

            paused = await writer.pause()
            assert paused["acked"] > acked_before, f"no write went through after the reconcile of {point}"
            acked_before = paused["acked"]
            await writer.resume()
            api.stop()
    finally:
        api.stop()
        summary = await writer.stop()

    assert summary["unknown"] == {}, "a client connection broke mid-transaction"
    acked_gtids = summary["acked_gtids"]
    assert len(acked_gtids) == len(set(acked_gtids)), "a GTID was acknowledged twice"
    master = one_master_followed(nodes)
    assert master is not None
    target = master.status()["gtid_binlog_pos"]
    for node in nodes:
        node.wait_for(target)
        current = position(node.status()["gtid_current_pos"])
        for gtid in acked_gtids:
            domain, _, seq = (int(x) for x in gtid.split("-"))
            assert current.get(domain).seq >= seq, (node.server_id, gtid)
        async with await FerryProtocolClient.connect(node.listen) as connection:
            for key, acked in summary["acked"].items():
                row = await connection.get(LOAD_TABLE, key)
                assert row is not None and row[LOAD_FIELD] == acked, (node.server_id, key, row, acked)


# -- in-process: what a dead instance left, reconciled --------------------------------------------------------


async def left_running(
    live: Any, cluster_id: int, type_: str, params: dict[str, Any], result: dict[str, Any], steps: list[Any]
) -> int:
    """An operation as a dead instance leaves it: running, holding the cluster with a lapsed lease."""
    async with session_scope(live.app.state.sessionmaker) as session:
        operation = Operation(cluster_id=cluster_id, type=type_, state=OperationState.running, params=params,
                              result=result, steps=steps, requester="a-dead-instance")  # fmt: skip
        session.add(operation)
        await session.flush()
        lapsed = datetime.now(UTC) - timedelta(seconds=1)
        await session.execute(
            update(OperationLock).where(OperationLock.cluster_id == cluster_id)
            .values(operation_id=operation.id, acquired_at=lapsed, lease_expires_at=lapsed,
                    fencing_token=OperationLock.fencing_token + 1)
        )  # fmt: skip
        return operation.id


async def test_a_drill_left_running_with_its_master_read_only_is_undone_and_its_run_interrupted(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)  # replicas read-only, as a deployment keeps them
    receiver = WebhookReceiver()
    async with serve(receiver) as hook_url, live_app() as live:
        cluster_id, ids = await register(live.client, ferryd, post_operation_webhooks=[hook_url])
        async with session_scope(live.app.state.sessionmaker) as session:
            run = DrillRun(cluster_id=cluster_id, requester="scheduler", state="running", reasons=[], details={})
            session.add(run)
            await session.flush()
            run_id = run.id
        switch = {
            "old_master_registered_server_id": ids["master"], "new_master_registered_server_id": ids["replica1"],
                                                   "connection": "main",
            "old_master_was_read_only": False, "candidate_was_read_only": True,
            "others": [[ids["replica2"], "main"]],
        }  # fmt: skip
        step = {"name": "old_master_read_only", "state": "running", "started_at": "2026-11-25T03:00:00Z",
                "finished_at": None, "duration_s": None, "detail": None}  # fmt: skip
        operation_id = await left_running(
            live, cluster_id, "drill", {"drill_run_id": run_id}, {"switch": switch}, [step]
        )
        ferryd.master.post("/v1/read-only", {"read_only": True})  # where the dead instance got to

        # The collector saw the master read-only: the topology says so while the operation is still held.
        await live.app.state.collector.run_cycle(as_leader=True)
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        assert topology["alerts"] == [], "an operation holds the cluster: its read-only master is expected"

        async with live.app.state.bus.subscribe(cluster_id) as events:
            assert await live.app.state.reconciler.run_once() == [operation_id]
            async with asyncio.timeout(WAIT_S):
                while (event := await events.next()).type != "alert":
                    pass
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        assert operation["state"] == "interrupted", operation
        assert event.data.fields() == {"kind": "operation_interrupted", "operation_id": operation_id, "type": "drill",
                              "message": operation["error"]}  # fmt: skip
        [call] = receiver.calls
        assert (call["stage"], call["state"], call["operation_id"]) == ("reconciled", "interrupted", operation_id)
        assert "old_master_read_only running" in operation["error"], operation["error"]
        assert "undone: master (server_id 1) writable again" in operation["error"], operation["error"]
        assert [s["state"] for s in operation["steps"]] == ["failed", "passed"]
        found = operation["result"]["reconciled"]["found"]["servers"]
        assert found["master (server_id 1)"]["read_only"] is True
        assert not ferryd.master.status()["read_only"]
        run_now = (await live.client.get(f"/api/v1/clusters/{cluster_id}/drills/runs/{run_id}")).json()
        assert run_now["state"] == "interrupted" and run_now["passed"] is False, run_now
        assert run_now["reasons"] == [operation["error"]]

        await live.app.state.collector.run_cycle(as_leader=True)
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        assert [(a["kind"], a["operation_id"]) for a in topology["alerts"]] == [("operation_interrupted", operation_id)]
        overview = (await live.client.get("/api/v1/clusters/overview")).json()
        [mine] = [c for c in overview if c["id"] == cluster_id]
        assert [a["kind"] for a in mine["alerts"]] == ["operation_interrupted"] and mine["health"] == "degraded"


@pytest.mark.parametrize("took_writes", [False, True], ids=["took-no-write", "took-writes"])
async def test_a_switchover_left_with_its_candidate_writable_is_settled_by_what_the_candidate_took(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], took_writes: bool
) -> None:
    """The dead instance had made the candidate writable and not yet cut its connection to the read-only old master
    (the window's end): the reconcile fences the candidate and judges it as a live stop does — it took no write:
    undone (the old master writable again, the candidate its read-only replica); it took a client's write: completed
    (the write is kept on the new master, which no longer replicates from the old one)."""
    ferryd = ferryd_factory(read_only_replicas=True)
    ferryd.write(2, domains=(1, 2))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        ferryd.master.post("/v1/read-only", {"read_only": True})
        ferryd.replica1.post("/v1/read-only", {"read_only": False})
        if took_writes:
            ferryd.replica1.increment("d1", "taken", domain=1)
        switch = {
            "old_master_registered_server_id": ids["master"], "new_master_registered_server_id": ids["replica1"],
                                                   "connection": "main",
            "old_master_was_read_only": False, "candidate_was_read_only": True,
            "others": [[ids["replica2"], "main"]],
        }  # fmt: skip
        step = {"name": "promote_candidate", "state": "passed", "started_at": "2026-11-25T03:00:00Z",
                "finished_at": "2026-11-25T03:00:01Z", "duration_s": 1.0, "detail": None}  # fmt: skip
        operation_id = await left_running(live, cluster_id, "switchover", {}, {"switch": switch}, [step])
        assert await live.app.state.reconciler.run_once() == [operation_id]
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
    assert operation["state"] == "interrupted", operation
    report = operation["result"]["reconciled"]
    assert report["problems"] == [], report
    replica1 = "replica1 (server_id 2)"
    failure = operation["result"]["failure"]
    if not took_writes:
        assert (failure["kind"], failure["changed"], failure["compensation"]) == ("interrupted", False, "undone")
        assert report["done"][0].startswith(f"{replica1} took no write"), report  # the verdict's reason, in words
        expected, follower_of = ferryd.master, {ferryd.replica1, ferryd.replica2}
    else:
        assert (failure["kind"], failure["changed"], failure["compensation"]) == (
            "interrupted", True, "rolled_forward")  # fmt: skip
        assert report["done"][0].startswith(f"{replica1} took writes as the master (1-2-"), report
        expected, follower_of = ferryd.replica1, {ferryd.master, ferryd.replica2}
    new_master = await eventually("one master followed", lambda: one_master_followed(ferryd.nodes), WAIT_S)
    assert new_master is expected and {n for n in ferryd.nodes if n is not new_master} == follower_of
    if took_writes:  # the write it took is on every server
        for node in ferryd.nodes:
            node.wait_for(ferryd.replica1.status()["gtid_binlog_pos"])


async def test_a_master_left_read_only_with_no_operation_running_is_an_alert(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    ferryd = ferryd_factory(read_only_replicas=True)  # replicas read-only, as a deployment keeps them
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        ferryd.master.post("/v1/read-only", {"read_only": True})
        await live.app.state.collector.run_cycle(as_leader=True)
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        [alert] = topology["alerts"]
        assert (alert["kind"], alert["registered_server_id"]) == ("master_read_only", ids["master"])
        assert "is read-only and no operation is running" in alert["message"]
        overview = (await live.client.get("/api/v1/clusters/overview")).json()
        [mine] = [c for c in overview if c["id"] == cluster_id]
        assert mine["alerts"] == [alert] and alert["message"] in mine["problems"]

        ferryd.master.post("/v1/read-only", {"read_only": False})
        await live.app.state.collector.run_cycle(as_leader=True)
        topology = (await live.client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
        assert topology["alerts"] == []


async def test_a_failover_left_running_after_its_promotion_is_completed(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster]
) -> None:
    """The dead instance promoted replica1 (its connection removed, writable) after the master died, and did
    not repoint replica2: the reconcile repoints it."""
    ferryd = ferryd_factory()
    async with live_app() as live:
        cluster_id, ids = await register(live.client, ferryd)
        ferryd.master.kill()
        ferryd.replica1.post("/v1/replication/main/stop", {})
        removed = httpx.delete(
            f"http://{ferryd.replica1.admin}/v1/replication/main",
            headers={"Authorization": f"Bearer {NODE_TOKEN}"},
            timeout=WAIT_S,
        )
        assert removed.status_code == 200, removed.text
        ferryd.replica1.post("/v1/read-only", {"read_only": False})
        operation_id = await left_running(
            live, cluster_id, "failover", {"automatic": True},
            {"old_master_registered_server_id": ids["master"], "new_master_registered_server_id": ids["replica1"]},
            [{"name": "promote_candidate", "state": "passed", "started_at": "2026-11-25T03:00:00Z",
              "finished_at": "2026-11-25T03:00:01Z", "duration_s": 1.0, "detail": None}],
        )  # fmt: skip
        assert await live.app.state.reconciler.run_once() == [operation_id]
        operation = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
        assert operation["state"] == "interrupted", operation
        report = operation["result"]["reconciled"]
        assert report["problems"] == [], report
        assert operation["result"]["failure"] == {
            "kind": "interrupted", "changed": True, "left": [], "compensation": "rolled_forward"
        }, report  # fmt: skip

        def follows() -> bool:
            connections = ferryd.replica2.status()["replication"]
            return [(c["master"], c["running"], c["io_state"]) for c in connections] == [
                (ferryd.replica1.listen, True, "connected")
            ]

        await eventually("replica2 to follow the promoted replica1", follows, WAIT_S)
        gtid = ferryd.replica1.increment("after", "k", domain=1)
        ferryd.replica2.wait_for(gtid)
