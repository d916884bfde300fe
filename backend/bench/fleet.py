"""A simulated fleet for scale benchmarks (never for tests, which keep real servers): one process serving the ferryd
admin API's status document for thousands of servers, with positions that move and lag that varies.

Every server has an address of its own on loopback — server i is 127.1.(i // 250).(i % 250 + 1) — and the same two
ports: `--port` for the admin API, `--port + 1` as its (never served) protocol address, so the control plane sees
distinct servers while this process holds one listening socket: it answers by the request's Host header. Servers
come in clusters of `--per-cluster`: the first a writable master, the others read-only replicas replicating from it.
Each master's position advances `--rate` transactions a second in each of 2 domains; each replica trails by 0 to 2
seconds' worth, varying over time, with the lag in its connection. `GET /v1/health` answers; any other path 404.

    python backend/bench/fleet.py --servers 1000 --per-cluster 3 --port 9400 [--rate 20]

prints `ready N` once it listens, then serves until SIGTERM. `fleet_addresses(...)` gives the addresses a benchmark
registers."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import signal
import time
from dataclasses import dataclass

import uvloop

DOMAINS = (1, 2)


@dataclass(frozen=True)
class SimulatedServer:
    index: int
    cluster: int
    server_id: int
    host: str
    master_host: str | None


def host_of(index: int) -> str:
    return f"127.1.{index // 250}.{index % 250 + 1}"


def fleet(servers: int, per_cluster: int) -> list[SimulatedServer]:
    """The fleet's servers: clusters of `per_cluster`, the first of each the master."""
    made = []
    for i in range(servers):
        cluster, position = divmod(i, per_cluster)
        master = cluster * per_cluster
        made.append(SimulatedServer(i, cluster, i + 1, host_of(i), None if position == 0 else host_of(master)))
    return made


class Fleet:
    def __init__(self, servers: list[SimulatedServer], port: int, rate: float, per_cluster: int):
        self.per_cluster = per_cluster
        self.by_host = {f"{s.host}:{port}": s for s in servers}
        self.servers = {s.index: s for s in servers}
        self.port = port
        self.rate = rate
        self.started = time.monotonic()
        self.requests = 0

    def _seq(self, server: SimulatedServer, domain: int, now: float) -> int:
        master_seq = int((now - self.started) * self.rate) + 1
        if server.master_host is None:
            return master_seq
        behind_s = 1.0 + math.sin(now / 7.0 + server.index)  # 0..2 s, moving
        return max(1, master_seq - int(behind_s * self.rate))

    def status(self, server: SimulatedServer) -> dict[str, object]:
        now = time.monotonic()
        master = self.servers[server.index - server.index % self.per_cluster]
        own = ",".join(f"{d}-{master.server_id}-{self._seq(server, d, now)}" for d in DOMAINS)
        document: dict[str, object] = {
            "server_id": server.server_id, "read_only": server.master_host is not None, "gtid_binlog_pos": own,
            "gtid_slave_pos": "" if server.master_host is None else own, "gtid_current_pos": own,
            "replication": [], "replicas": [], "default_domain": 1,
        }  # fmt: skip
        if server.master_host is not None:
            ahead = ",".join(f"{d}-{master.server_id}-{self._seq(master, d, now)}" for d in DOMAINS)
            lag = {
                str(d): {
                    "transactions": self._seq(master, d, now) - self._seq(server, d, now),
                    "seconds": round((self._seq(master, d, now) - self._seq(server, d, now)) / self.rate, 3),
                }
                for d in DOMAINS
            }
            document["replication"] = [{
                "name": "main", "master": f"{server.master_host}:{self.port + 1}", "running": True,
                "io_state": "connected", "sql_state": "waiting_for_relay", "received_position": ahead,
                "applied_position": own, "master_position": ahead, "lag": lag,
            }]  # fmt: skip
        return document

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else ""
                host = next(
                    (line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("host:")), ""
                )
                self.requests += 1
                server = self.by_host.get(host)
                if path == "/v1/health":
                    status, body = "200 OK", b'{"ok": true}'
                elif server is not None and path == "/v1/status":
                    status, body = "200 OK", json.dumps(self.status(server)).encode()
                else:
                    status, body = "404 Not Found", b'{"error": {"code": "not_found", "message": "simulated"}}'
                answer = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                writer.write(answer.encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--per-cluster", type=int, default=3)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rate", type=float, default=20.0)
    args = parser.parse_args()
    simulated = Fleet(fleet(args.servers, args.per_cluster), args.port, args.rate, args.per_cluster)
    # Every loopback address is one of the fleet's: the wildcard address is the one socket that takes them all.
    server = await asyncio.start_server(simulated.serve, "0.0.0.0", args.port, backlog=4096)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"ready {args.servers}", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    uvloop.run(main())  # the simulator shares the cores with what it measures: the lighter the better
