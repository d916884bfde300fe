"""Benchmark: the control plane under a room of dashboards — N open event streams, a steady rate of dashboard reads
and planned switchovers in the middle, as a deployment runs it: the web process (uvicorn) and, with --split (the
default), the worker (`python -m ferry_control worker`) as processes of their own; with --single one process does
both (FERRY_ROLE=all, the arrangement before the worker existed).

Starts three ferryd nodes (release binary unless FERRYD_BIN says otherwise; the replicas read-only), a throwaway
database (SQLite unless --database-url), the control plane, registers the nodes, starts the test suite's load writer
(its own process), opens --streams SSE streams from a separate process (raw sockets, so the client is not what
limits), then for --duration-s issues --reads-per-s reads (positions, topology, overview, interleavings in turn; each
timed from send to last byte) while running --switchovers switchovers back and forth, each recording its
write-unavailability window (old master read-only → new master writable, `unavailable_s`). Then, the streams still
open, it times --position-samples position changes to the page's event stream (each at a random instant against the
poll interval: the master's gtid_current_pos read from the node itself, then the wait until a `position` event of
that server at or past it in every domain arrives on an SSE stream of its own), and finally SIGKILLs the master and
times the automatic failover: the kill to the failover operation's creation (detection) and to its success.
Prints one JSON object: read p50/p99, the windows, position → event p50/p99, the failover's figures, how many
streams were held to the end, and the CPU (cores) of the web process, the worker and the streams' client while
measured (reads and switchovers).

    .venv/bin/python backend/bench/dashboards.py --streams 1000 [--single] [--database-url postgresql://…]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

BACKEND = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BACKEND))

import httpx  # noqa: E402
from bench.measure import WINDOW_STEPS, machine_cpu_s, process_cpu_s, process_run_delay_s, quantile  # noqa: E402

from ferry_control.core.migrate import upgrade  # noqa: E402
from tests.ferryd_cluster import NODE_TOKEN, REPO_ROOT, WAIT_S, FerrydCluster, free_port_pair  # noqa: E402
from tests.helpers import LoadWriter, register  # noqa: E402

READS = ("positions", "topology", "overview", "interleavings")


# -- the streams' process ----------------------------------------------------------------------------------------


async def hold_streams(port: int, token: str, cluster_id: int, count: int) -> None:
    """Opens `count` SSE streams on loopback, prints `connected N` once all answered 200, and on SIGTERM prints
    {"held": streams still open, "events": total events, "min_events": fewest on one stream}."""
    events = [0] * count
    open_streams = [False] * count
    request = (
        f"GET /api/v1/clusters/{cluster_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    ).encode()
    connected = asyncio.Event()
    answered = 0

    async def one(index: int) -> None:
        nonlocal answered
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        status = await reader.readline()
        answered += 1
        if answered == count:
            connected.set()
        if b" 200 " not in status:
            print(f"stream {index}: {status!r}", file=sys.stderr, flush=True)
            return
        open_streams[index] = True
        try:
            while line := await reader.readline():
                if line.startswith(b"event:"):
                    events[index] += 1
        finally:
            open_streams[index] = False

    tasks = []
    for i in range(count):
        tasks.append(asyncio.create_task(one(i)))
        if i % 50 == 49:
            await asyncio.sleep(0.05)  # pacing the opening only; nothing is measured here
    if count:
        await connected.wait()
    print(f"connected {sum(open_streams)}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    print(json.dumps({"held": sum(open_streams), "events": sum(events), "min_events": min(events, default=0)}),
          flush=True)  # fmt: skip
    for task in tasks:
        task.cancel()


# -- the benchmark -----------------------------------------------------------------------------------------------


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(command, cwd=BACKEND, env=env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def readline(process: subprocess.Popen[str], what: str) -> str:
    assert process.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 120)
    if not line:
        raise SystemExit(f"{what} ended without a word")
    return line.strip()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--reads-per-s", type=float, default=50.0)
    parser.add_argument("--switchovers", type=int, default=6)
    parser.add_argument("--duration-s", type=float, default=40.0, help="at least this long of reads")
    parser.add_argument("--single", action="store_true", help="one process (FERRY_ROLE=all) instead of web + worker")
    parser.add_argument("--database-url", default=None, help="default: a throwaway SQLite file")
    parser.add_argument("--position-samples", type=int, default=30)
    parser.add_argument("--poll-interval-s", type=float, default=1.0, help="the collector's (FERRY_POLL_INTERVAL_S)")
    parser.add_argument("--stream-clients", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--cluster", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stream_clients is not None:
        await hold_streams(args.port, args.token, args.cluster, args.stream_clients)
        return

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the children inherit room for every stream
    os.environ.setdefault("FERRYD_BIN", str(REPO_ROOT / "engine" / "target" / "release" / "ferryd"))
    with tempfile.TemporaryDirectory(prefix="ferry-bench-dashboards-") as tmp_dir:
        tmp = Path(tmp_dir)
        database_url = args.database_url or f"sqlite+aiosqlite:///{tmp}/control.sqlite3"
        upgrade(database_url)
        ferryd = FerrydCluster(tmp / "nodes", read_only_replicas=True)
        ferryd.start()
        port, _ = free_port_pair()
        env = {
            **os.environ, "FERRY_DATABASE_URL": database_url, "FERRY_ENVIRONMENT": "development",
            "FERRY_DEV_SECRET_KEY_FILE": str(tmp / "secret.key"), "FERRY_NODE_TOKEN": NODE_TOKEN,
            "FERRY_DRILL_SCHEDULER_ENABLED": "false", "FERRY_NODE_READ_RETRIES_MAX": "0",
            # One token holds every stream here and issues every read: per-token bounds would measure themselves.
            "FERRY_EVENTS_STREAMS_PER_TOKEN_MAX": str(max(args.streams + 10, 50)),
            "FERRY_EXPENSIVE_READS_PER_MIN": "100000", "FERRY_HEAVY_READS_PER_TOKEN_MAX": "8",
            "FERRY_POLL_INTERVAL_S": str(args.poll_interval_s),
        }  # fmt: skip
        processes: list[subprocess.Popen[str]] = []
        writer = None
        try:
            created = subprocess.run(
                [sys.executable, "-m", "ferry_control.cli", "create-token", "--name", "bench", "--role", "operator"],
                cwd=BACKEND, env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            token = created.stdout.strip()
            if not args.single:
                worker = start([sys.executable, "-m", "ferry_control", "worker"], env, tmp / "worker.log")
                processes.append(worker)
                await readline(worker, "the worker")
            web_env = {**env, "FERRY_ROLE": "all" if args.single else "web"}
            web = start(
                [sys.executable, "-m", "uvicorn", "--factory", "ferry_control.main:create_app", "--host", "127.0.0.1",
                 "--port", str(port), "--no-access-log"], web_env, tmp / "web.log",
            )  # fmt: skip
            processes.append(web)
            headers = {"Authorization": f"Bearer {token}"}
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120, limits=limits
            ) as client:
                deadline = time.monotonic() + WAIT_S
                while True:
                    try:
                        if (await client.get("/api/v1/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline or web.poll() is not None:
                        raise SystemExit(f"the web process did not answer; see {tmp / 'web.log'}")
                    await asyncio.sleep(0.1)
                cluster_id, ids = await register(client, ferryd, name="bench", auto_failover=True)
                writer = await LoadWriter.start(ferryd.nodes, clients=4, domains=3, rate=200)
                streams = start(
                    [sys.executable, str(Path(__file__).resolve()), "--stream-clients", str(args.streams), "--port",
                     str(port), "--token", token, "--cluster", str(cluster_id)], env, tmp / "streams.log",
                )  # fmt: skip
                processes.append(streams)
                connected = await readline(streams, "the streams' process")
                named = {
                    "web": web.pid,
                    "streams": streams.pid,
                    **({} if args.single else {"worker": processes[0].pid}),
                }
                named |= {f"ferryd{i}": node.proc.pid for i, node in enumerate(ferryd.nodes, 1) if node.proc}
                named["writer"] = writer.process.pid
                cpu_before, wall_before = {n: process_cpu_s(p) for n, p in named.items()}, time.monotonic()
                waited_before, machine_before = {n: process_run_delay_s(p) for n, p in named.items()}, machine_cpu_s()
                result = await measure(client, cluster_id, ids, args)
                wall = time.monotonic() - wall_before
                cpu = {n: round((process_cpu_s(p) - cpu_before[n]) / wall, 2) for n, p in named.items()}
                machine = [
                    (after - before) / wall for before, after in zip(machine_before, machine_cpu_s(), strict=True)
                ]
                cpu["machine_busy"], cpu["machine_steal"] = round(machine[0], 2), round(machine[1], 3)
                # The share of the run each process spent runnable but waiting for a CPU (summed over its threads).
                waited = {n: round((process_run_delay_s(p) - waited_before[n]) / wall, 3) for n, p in named.items()}
                nodes = {"master": ferryd.master, "replica1": ferryd.replica1, "replica2": ferryd.replica2}
                master = await current_master(client, cluster_id, ids)
                to_event = await position_to_event(
                    client, cluster_id, ids[master], f"http://{nodes[master].admin}", args.position_samples
                )
                failover = await failover_after_kill(client, cluster_id, nodes[master])
                streams.send_signal(signal.SIGTERM)
                held = json.loads(await readline(streams, "the streams' process"))
                writer_summary = await writer.stop()
                writer = None
        finally:
            if writer is not None:
                await writer.stop()
            for process in reversed(processes):
                stop(process)
            ferryd.stop()
    windows = result["windows"]
    latencies = result["latencies"]
    print(
        json.dumps(
            {
                "benchmark": "dashboards_and_switchover",
                "processes": "single" if args.single else "web+worker",
                "database": "sqlite" if args.database_url is None else "postgresql",
                "streams": args.streams,
                "streams_connected": int(connected.split()[-1]),
                "streams_held": held["held"],
                "stream_events": held["events"],
                "reads_per_s_target": args.reads_per_s,
                "reads": len(latencies),
                "read_errors": result["errors"],
                "read_p50_ms": round(1000 * quantile(latencies, 0.5), 1),
                "read_p99_ms": round(1000 * quantile(latencies, 0.99), 1),
                # The same reads as the web process timed them (request to the answer's start), from Server-Timing.
                "read_server_p50_p99_ms": [round(1000 * quantile(result["server_s"], q), 1) for q in (0.5, 0.99)]
                if result["server_s"]
                else None,
                "read_p50_p99_ms_by_kind": {
                    kind: [round(1000 * quantile(seen, q), 1) for q in (0.5, 0.99)]
                    for kind, seen in result["by_kind"].items()
                    if seen
                },
                "switchovers": len(windows),
                "unavailable_ms_median": round(1000 * statistics.median(windows), 1),
                "unavailable_ms_max": round(1000 * max(windows), 1),
                # Where the window goes: each step's median (the first step's time includes the routing change made
                # before the window opens), and the rest (between the steps: the fence checks, the loop's turns).
                "window_steps_ms_median": {
                    name: round(1000 * statistics.median(p[name] for p in result["parts"] if name in p), 1)
                    for name in WINDOW_STEPS
                    if any(name in p for p in result["parts"])
                },
                "position_to_event_samples": len(to_event),
                "position_to_event_ms_p50": round(1000 * quantile(to_event, 0.5), 1),
                "position_to_event_ms_p99": round(1000 * quantile(to_event, 0.99), 1),
                "poll_interval_s": args.poll_interval_s,
                "failover": failover,
                "writer_acked": sum(writer_summary["acked"].values()),
                "cpu_cores": cpu,
                "waiting_for_cpu_share": waited,
                "ferryd": os.environ["FERRYD_BIN"],
            }
        )
    )


async def measure(client: httpx.AsyncClient, cluster_id: int, ids: dict[str, int], args: Any) -> dict[str, Any]:
    paths = {
        "positions": f"/api/v1/clusters/{cluster_id}/positions",
        "topology": f"/api/v1/clusters/{cluster_id}/topology",
        "overview": "/api/v1/clusters/overview",
        "interleavings": f"/api/v1/clusters/{cluster_id}/interleavings?limit=50",
    }
    latencies: list[float] = []
    server_s: list[float] = []  # the handler's own time, from each answer's Server-Timing
    by_kind: dict[str, list[float]] = {kind: [] for kind in READS}
    errors: dict[str, int] = {}
    in_flight: set[asyncio.Task[None]] = set()

    async def read(kind: str) -> None:
        started = time.perf_counter()
        try:
            response = await client.get(paths[kind])
            await response.aread()
            if response.status_code != 200:
                errors[f"{kind} {response.status_code}"] = errors.get(f"{kind} {response.status_code}", 0) + 1
                return
        except httpx.HTTPError as e:
            errors[f"{kind} {type(e).__name__}"] = errors.get(f"{kind} {type(e).__name__}", 0) + 1
            return
        latencies.append(time.perf_counter() - started)
        by_kind[kind].append(latencies[-1])
        timing = response.headers.get("server-timing", "")
        if timing.startswith("app;dur="):
            server_s.append(float(timing.removeprefix("app;dur=")) / 1000)

    windows: list[float] = []
    parts: list[dict[str, float]] = []

    async def switchovers() -> None:
        await asyncio.sleep(args.duration_s / 4)  # reads settle first; a schedule, not a wait for a condition
        for i in range(args.switchovers):
            candidate = ids["replica1"] if i % 2 == 0 else ids["master"]
            response = await client.post(
                f"/api/v1/clusters/{cluster_id}/operations/switchover",
                json={"candidate_registered_server_id": candidate},
            )
            if response.status_code != 202:
                raise SystemExit(f"switchover {i}: {response.status_code} {response.text}")
            operation_id = response.json()["id"]
            while True:
                operation = (await client.get(f"/api/v1/clusters/{cluster_id}/operations/{operation_id}")).json()
                if operation["state"] in ("succeeded", "failed", "undone", "interrupted"):
                    break
                await asyncio.sleep(0.2)
            if operation["state"] != "succeeded":
                raise SystemExit(f"switchover {i} {operation['state']}: {operation['error']}")
            windows.append(operation["result"]["unavailable_s"])
            parts.append(
                {step["name"]: step["duration_s"] for step in operation["steps"] if step["name"] in WINDOW_STEPS}
            )

    switching = asyncio.create_task(switchovers())
    interval = 1.0 / args.reads_per_s
    started = time.monotonic()
    n = 0
    while time.monotonic() - started < args.duration_s or not switching.done():
        task = asyncio.create_task(read(READS[n % len(READS)]))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
        n += 1
        await asyncio.sleep(max(0.0, started + n * interval - time.monotonic()))  # the read schedule
    await switching
    await asyncio.gather(*in_flight)
    return {
        "windows": windows,
        "parts": parts,
        "latencies": latencies,
        "server_s": server_s,
        "by_kind": by_kind,
        "errors": errors,
    }


async def current_master(client: httpx.AsyncClient, cluster_id: int, ids: dict[str, int]) -> str:
    """The role name (as registered) of the server the topology shows as master."""
    topology = (await client.get(f"/api/v1/clusters/{cluster_id}/topology")).json()
    master_id = next(node["registered_server_id"] for node in topology["nodes"] if node["role"] == "master")
    return next(name for name, server_id in ids.items() if server_id == master_id)


def parse_position(text: str) -> dict[int, int]:
    """ "1-1-10,2-1-7" → {1: 10, 2: 7}."""
    seqs: dict[int, int] = {}
    for gtid in filter(None, (part.strip() for part in text.split(","))):
        domain, _, seq_no = gtid.split("-")
        seqs[int(domain)] = int(seq_no)
    return seqs


def covered(seen: dict[int, int], reached: dict[int, int]) -> bool:
    """Whether the positions seen are at or past `reached` in each of its domains."""
    return all(seen.get(domain, -1) >= seq_no for domain, seq_no in reached.items())


async def position_to_event(
    client: httpx.AsyncClient, cluster_id: int, server_id: int, admin_url: str, samples: int
) -> list[float]:
    """Seconds from a position read on the node to a `position` event at or past it on an open stream, per sample."""
    seen: dict[int, int] = {}
    changed = asyncio.Condition()
    subscribed = asyncio.Event()

    async def follow() -> None:
        async with client.stream("GET", f"/api/v1/clusters/{cluster_id}/events", timeout=None) as stream:
            if stream.status_code != 200:
                raise SystemExit(f"the position follower's stream: {stream.status_code} {(await stream.aread())!r}")
            name = ""
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                    subscribed.set()
                elif line.startswith("data:") and name == "position":
                    data = json.loads(line[5:])
                    if data["registered_server_id"] == server_id and data.get("seq_no") is not None:
                        seen[data["domain"]] = max(seen.get(data["domain"], -1), data["seq_no"])
                        async with changed:
                            changed.notify_all()

    following = asyncio.create_task(follow())
    delays: list[float] = []
    try:
        await asyncio.wait_for(asyncio.shield(subscribed.wait()), WAIT_S)
        if following.done():
            following.result()
        async with httpx.AsyncClient(base_url=admin_url, headers={"Authorization": f"Bearer {NODE_TOKEN}"}) as node:
            for _ in range(samples):
                await asyncio.sleep(random.uniform(0.0, 1.0))  # a random phase against the poll interval
                started = time.perf_counter()
                reached = parse_position((await node.get("/v1/status")).json()["gtid_current_pos"])
                async with changed:
                    await asyncio.wait_for(changed.wait_for(lambda r=reached: covered(seen, r)), WAIT_S)
                delays.append(time.perf_counter() - started)
    finally:
        following.cancel()
    return delays


async def failover_after_kill(client: httpx.AsyncClient, cluster_id: int, master: Any) -> dict[str, Any]:
    """SIGKILLs the master and follows the automatic failover: seconds to its operation's creation (the loss
    detected and confirmed) and to its success, as read by polling the operations list every 50 ms."""
    path = f"/api/v1/clusters/{cluster_id}/operations"
    before = {o["id"] for o in (await client.get(path)).json()}
    killed_wall, killed = time.time(), time.monotonic()
    master.kill()
    deadline = killed + WAIT_S
    while True:
        operations = [o for o in (await client.get(path)).json() if o["id"] not in before and o["type"] == "failover"]
        if operations and operations[0]["state"] not in ("pending", "running"):
            operation = operations[0]
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"no automatic failover ended within {WAIT_S} s of the master's SIGKILL")
        await asyncio.sleep(0.05)  # the read schedule of the follower
    created = datetime.fromisoformat(operation["created_at"]).timestamp()
    return {
        "state": operation["state"],
        "kill_to_detected_s": round(created - killed_wall, 3),
        "kill_to_succeeded_s": round(time.monotonic() - killed, 3),
    }


if __name__ == "__main__":
    asyncio.run(main())
