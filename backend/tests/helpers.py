"""Helpers shared by the API-level tests: registering a ferryd cluster through the API, waiting for an operation,
reading what the nodes say, waiting for the collector's cycles, stopping a replica on a strict-mode error, driving the
load writer process (`ferry-bench commit --ledger`), serving an ASGI app on a real port, and a local webhook
receiver."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn
from fastapi import FastAPI

from tests.ferryd_cluster import REPO_ROOT, FerrydCluster, FerrydNode, protocol
from tests.mariadb_cluster import eventually

if TYPE_CHECKING:
    from tests.conftest import Live

#: Bound on every wait for a condition in these tests.
WAIT_S = 60.0


async def cycles_ended(live: Live, more: int) -> None:
    """Returns once `more` of the live app's collector cycles have ended from now (0: at once); the first of them may
    have begun before."""
    collector = live.app.state.collector
    target = collector.cycles + more
    await eventually(f"{more} more collector cycles (at {collector.cycles})", lambda: collector.cycles >= target)


async def whole_cycles(live: Live, count: int) -> None:
    """Returns once the live app's collector (and its after-cycle hooks) ran `count` whole cycles begun after now."""
    await cycles_ended(live, count + 1)


def stop_process(process: subprocess.Popen[Any], wait_s: float = WAIT_S) -> None:
    """Stops a process this test started, by its pid: SIGTERM, then SIGKILL if it has not ended within `wait_s`."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(wait_s)


#: Where the load writer's clients count: client c increments row `d<domain>c<c>` of this table, field `n`.
LOAD_TABLE = "load"
LOAD_FIELD = "n"
#: The load writer's attempts per second in all: a steady load the replicas keep up with on a small machine (as
#: fast as the master answers, they fall behind, and a switchover's preflight rightly refuses a candidate that far
#: behind).
LOAD_RATE = 1000.0


async def register(
    client: httpx.AsyncClient, ferryd: FerrydCluster, name: str = "ferry", **cluster_fields: Any
) -> tuple[int, dict[str, int]]:
    """A cluster with the three nodes registered; returns its id and the registered ids by role."""
    response = await client.post("/api/v1/clusters", json={"name": name, **cluster_fields})
    assert response.status_code == 201, response.text
    cluster = response.json()
    ids = {}
    for role, node in (("master", ferryd.master), ("replica1", ferryd.replica1), ("replica2", ferryd.replica2)):
        response = await client.post(
            f"/api/v1/clusters/{cluster['id']}/servers",
            json={
                "name": role,
                "host": "127.0.0.1",
                "protocol_port": node.protocol_port,
                "admin_port": node.admin_port,
            },
        )
        assert response.status_code == 201, response.text
        ids[role] = response.json()["id"]
    return cluster["id"], ids


async def finished(app: FastAPI, client: httpx.AsyncClient, cluster_id: int, operation_id: int) -> dict[str, Any]:
    """Waits for an operation this app runs to end; returns it as the API shows it."""
    async with asyncio.timeout(WAIT_S):
        await app.state.runner.wait(operation_id)
    response = await client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")
    assert response.status_code == 200, response.text
    return response.json()


async def run_operation(
    app: FastAPI, client: httpx.AsyncClient, cluster_id: int, kind: str, body: dict[str, Any]
) -> dict[str, Any]:
    response = await client.post(f"/api/v1/clusters/{cluster_id}/operations/{kind}", json=body)
    assert response.status_code == 202, response.text
    return await finished(app, client, cluster_id, response.json()["id"])


def step(operation: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in operation["steps"] if s["name"] == name)


def check(operation: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in operation["result"]["checks"] if c["name"] == name)


def topology(nodes: list[FerrydNode]) -> dict[int, Any]:
    """Per node (server_id): read-only flag and its connections' (name, master, running)."""
    shape = {}
    for node in nodes:
        status = node.status()
        shape[node.server_id] = (
            status["read_only"],
            sorted((c["name"], c["master"], c["running"]) for c in status["replication"]),
        )
    return shape


def connection(node: FerrydNode, name: str = "main") -> dict[str, Any]:
    return next(c for c in node.status()["replication"] if c["name"] == name)


async def stop_on_strict_mode(ferryd: FerrydCluster) -> str:
    """Replica 1 commits a transaction of its own in domain 1; the master's next one in domain 1 is then not above
    it, and strict mode stops replica 1's connection on it. Returns the master's transaction's GTID."""
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    ferryd.replica1.increment("d1", "replica-own", domain=1)
    failing = ferryd.master.increment("d1", "skipped", domain=1)

    async def stopped() -> dict[str, Any] | None:
        error = connection(ferryd.replica1)["last_error"]
        return error if error else None

    error = await eventually("replica 1's connection to stop on strict mode", stopped)
    assert (error["side"], error["code"]) == ("sql", "STRICT_MODE"), error
    assert failing in error["message"], error
    return failing


def writable_master(nodes: list[FerrydNode]) -> FerrydNode:
    masters = [n for n in nodes if not n.status()["read_only"] and not n.status()["replication"]]
    assert len(masters) == 1, topology(nodes)
    return masters[0]


def ferry_bench_binary() -> Path:
    """The `ferry-bench` beside the ferryd binary the tests run ($FERRYD_BIN, else engine/target/{release,debug}),
    else engine/target/{debug,release}/ferry-bench."""
    candidates = [protocol.ferryd_binary().with_name("ferry-bench")]
    candidates += [REPO_ROOT / "engine" / "target" / profile / "ferry-bench" for profile in ("debug", "release")]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError("no ferry-bench binary: build it (cd engine && cargo build --locked -p ferry-bench)")


class LoadWriter:
    """The load writer, `ferry-bench commit --ledger --control stdin`, its own process (so its CPU does not slow the
    control plane under test): `await LoadWriter.start(nodes)`, `pause()`, `resume()`, `stop()` → summary.

    Each of `clients` connections increments its own row (`LOAD_TABLE`, key `d<domain>c<client>`, field
    `LOAD_FIELD`) in domain `1 + client % domains`, one transaction at a time (`rate` attempts per second in all;
    None: as fast as the master answers), and follows the master: a READ_ONLY refusal or a lost connection moves it
    to the next node. Each attempt ends acknowledged (counted, GTID kept),
    refused (nothing written) or unknown (the connection broke with the transaction in flight). `pause()` answers
    once no transaction is in flight ({"paused": true, "acked": n}); `stop()` answers with the summary:
    {"acked": {key: n}, "unknown": {key: n}, "refused": n, "acked_gtids": [...], "master_changes": n, ...}.

    Following by refusals needs exactly one writable node, as a deployment keeps it: the replicas read-only
    (`ferryd_factory(read_only_replicas=True)`)."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process

    @classmethod
    async def start(
        cls, nodes: list[FerrydNode], clients: int = 8, domains: int = 4, rate: float | None = LOAD_RATE
    ) -> LoadWriter:
        writable = [n.server_id for n in nodes if not n.status()["read_only"]]
        assert len(writable) == 1, f"the writer follows the one writable node; writable: {writable}"
        process = await asyncio.create_subprocess_exec(
            str(ferry_bench_binary()), "commit", "--addr", ",".join(n.listen for n in nodes),
            "--clients", str(clients), "--domains", str(domains), "--table", LOAD_TABLE, "--ledger",
            "--control", "stdin", *(("--rate", str(rate)) if rate else ()),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=256 * 1024 * 1024,
        )  # fmt: skip
        return cls(process)

    async def _command(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command.encode() + b"\n")
        await self.process.stdin.drain()
        async with asyncio.timeout(WAIT_S):
            line = await self.process.stdout.readline()
        assert line, f"the load writer ended (exit {await self.process.wait()})"
        return json.loads(line)

    async def pause(self) -> dict[str, Any]:
        return await self._command("pause")

    async def resume(self) -> dict[str, Any]:
        return await self._command("resume")

    async def stop(self) -> dict[str, Any]:
        summary = await self._command("stop")
        async with asyncio.timeout(WAIT_S):
            await self.process.wait()
        return summary

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


@asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Serves an ASGI app with uvicorn on a free loopback port in this event loop; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_level="warning"))
    serving = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(WAIT_S):
            while not server.started:
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


Handler = Callable[[dict[str, Any]], Awaitable[int]]


class WebhookReceiver:
    """A local HTTP receiver for webhooks: records every JSON body POSTed to it; `handler` (async, given the body)
    may act and choose the status code (default 200)."""

    def __init__(self, handler: Handler | None = None):
        self.calls: list[dict[str, Any]] = []
        self.handler = handler
        self.received = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        payload = json.loads(body or b"null")
        self.calls.append(payload)
        status = await self.handler(payload) if self.handler else 200
        self.received.set()
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})
