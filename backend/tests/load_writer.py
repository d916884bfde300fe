"""A load writer that follows the master and remembers exactly what was acknowledged, run as its own process
(`python -m tests.load_writer`) so its CPU does not slow the control plane under test.

Each of `--clients` connections increments its own counter row (table `load`, key `d<domain>c<client>`, field `n`)
in domain `1 + client % domains`, one transaction at a time, as fast as the node answers. On READ_ONLY or a lost
connection it looks for the master again through the admin API (the node that is writable and has no replication
connection at all) and goes on. Each attempt ends as acknowledged (counted, GTID kept), refused (READ_ONLY: nothing
written) or unknown (the connection broke while the transaction was in flight).

Commands on stdin, one per line, each answered by one JSON line on stdout:
  `pause`   stop starting transactions; answered once none is in flight: {"paused": true}
  `resume`  go on: {"resumed": true}
  `stop`    end: the summary {"acked": {key: n}, "unknown": {key: n}, "refused": n, "acked_gtids": [...], ...}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, field

import httpx

from ferry_control.drivers.ferry_protocol import (
    FerryProtocolClient,
    Increment,
    ProtocolConnectionError,
    ProtocolRefused,
)

TABLE = "load"
FIELD = "n"


def key_of(domain: int, client: int) -> str:
    return f"d{domain}c{client}"


@dataclass
class Node:
    listen: str
    admin: str


@dataclass
class State:
    nodes: list[Node]
    domains: int
    running: asyncio.Event = field(default_factory=asyncio.Event)
    in_flight: int = 0
    idle: asyncio.Event = field(default_factory=asyncio.Event)
    acked: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)
    refused: int = 0
    gtids: list[str] = field(default_factory=list)
    master: str | None = None
    master_changes: int = 0
    stopping: bool = False


async def find_master(state: State, http: httpx.AsyncClient) -> str:
    while True:
        for node in state.nodes:
            try:
                status = (await http.get(f"http://{node.admin}/v1/status", timeout=2.0)).json()
            except (httpx.HTTPError, ValueError):
                continue
            # A replica being repointed is writable with its connection stopped for a moment: the master is the
            # writable node with no connection at all.
            if not status["read_only"] and not status.get("replication"):
                if state.master != node.listen:
                    state.master = node.listen
                    state.master_changes += 1
                return node.listen
        await asyncio.sleep(0.005)


async def client_loop(state: State, client: int, http: httpx.AsyncClient) -> None:
    domain = 1 + client % state.domains
    key = key_of(domain, client)
    connection: FerryProtocolClient | None = None
    while not state.stopping:
        await state.running.wait()
        if state.stopping:
            break
        if connection is None:
            try:
                connection = await FerryProtocolClient.connect(await find_master(state, http), timeout_s=10.0)
            except ProtocolConnectionError:
                await asyncio.sleep(0.005)
                continue
        if not state.running.is_set():  # paused while connecting: no await from here to in_flight += 1
            continue
        state.in_flight += 1
        state.idle.clear()
        try:
            committed = await connection.transact([Increment(TABLE, key, FIELD, 1)], domain=domain)
            state.acked[key] = state.acked.get(key, 0) + 1
            state.gtids.append(committed.gtid)
        except ProtocolRefused as e:
            if e.name != "READ_ONLY":
                raise
            state.refused += 1
            await connection.close()
            connection = None
        except ProtocolConnectionError:
            state.unknown[key] = state.unknown.get(key, 0) + 1
            await connection.close()
            connection = None
        finally:
            state.in_flight -= 1
            if state.in_flight == 0:
                state.idle.set()
    if connection is not None:
        await connection.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--node", action="append", required=True, help="LISTEN=ADMIN, once per node")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--domains", type=int, default=4)
    args = parser.parse_args()
    nodes = [Node(*spec.split("=", 1)) for spec in args.node]
    state = State(nodes=nodes, domains=args.domains)
    state.idle.set()
    state.running.set()
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def say(obj: object) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    async with httpx.AsyncClient() as http:
        tasks = [asyncio.create_task(client_loop(state, i, http)) for i in range(args.clients)]
        while True:
            line = (await reader.readline()).decode().strip()
            if line == "pause":
                state.running.clear()
                await state.idle.wait()
                say({"paused": True, "acked": sum(state.acked.values())})
            elif line == "resume":
                state.running.set()
                say({"resumed": True})
            elif line in ("stop", ""):
                state.running.clear()
                await state.idle.wait()
                state.stopping = True
                state.running.set()
                await asyncio.gather(*tasks)
                say(
                    {
                        "acked": state.acked,
                        "unknown": state.unknown,
                        "refused": state.refused,
                        "acked_gtids": state.gtids,
                        "master_changes": state.master_changes,
                        "seconds": round(time.monotonic() - started, 3),
                    }
                )
                return


if __name__ == "__main__":
    asyncio.run(main())
