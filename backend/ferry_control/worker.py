"""The worker process: `python -m ferry_control worker`. It runs the
control plane's background work — the collector, the operations web processes accept, the failover monitor, drill
scheduling, reconciliation — and serves no request, so however many dashboards are open, none of it waits behind
them. Settings as for the API (FERRY_*); the role is `worker` whatever FERRY_ROLE says.

It prints `worker ready <instance id>` on stdout once started and stops on SIGTERM or SIGINT: running operations
get `operation_shutdown_grace_s` to finish, then are stopped and undone (runner.py), and the collector's lease is
given back so another worker takes over at once. With `--metrics-port`, its Prometheus metrics (collector cycles,
operations, the relay) are served on that loopback port (0: a free one), said first as `worker metrics ADDRESS`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

import uvloop
from prometheus_client import start_http_server

from ferry_control.core.config import Settings, get_settings
from ferry_control.core.db import create_engine, create_sessionmaker
from ferry_control.core.heap import startup_heap_set_aside
from ferry_control.plane import ControlPlane

log = logging.getLogger("ferry_control.worker")


async def run_worker(settings: Settings, *, metrics_port: int | None = None) -> None:
    settings = settings.model_copy(update={"role": "worker"})
    engine = create_engine(settings, background=True)
    plane = ControlPlane(settings, create_sessionmaker(engine))
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    try:
        if metrics_port is not None:
            server, _ = start_http_server(metrics_port, addr="127.0.0.1", registry=plane.metrics.registry)
            # Port 0 takes any free one: the line says which (the worker's tests read it).
            print(f"worker metrics 127.0.0.1:{server.server_port}", flush=True)
        await plane.start()
        print(f"worker ready {plane.instance_id}", flush=True)
        with startup_heap_set_aside():  # full collections walk only what came after start-up
            await stopping.wait()
        log.info("worker %s stopping", plane.instance_id)
    finally:
        await plane.stop()
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ferry_control worker", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on 127.0.0.1:PORT (0: any free port)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # uvloop: the event loop the web process runs under uvicorn too (a fifth less CPU per request measured).
    uvloop.run(run_worker(get_settings(), metrics_port=args.metrics_port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
