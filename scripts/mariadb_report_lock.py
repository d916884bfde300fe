#!/usr/bin/env python3
"""The MariaDB demo's "long report" on a parallel-applying replica: holds a read lock on one domain's table for
--hold-s of every --period-s seconds, as a reporting query on a replica would, so the replica's apply in that
domain waits and its lag climbs and drains while the other domains keep applying in parallel (per-domain lag
that moves, and a binlog on that replica whose interleaving differs from its upstream's).

    scripts/mariadb_report_lock.py --cluster-json D/cluster.json --server 5 [--domain 1] [--hold-s 8] [--period-s 20]

The server must apply in parallel with room left for the other domains (stack.sh sets slave_parallel_threads and
slave_domain_parallel_threads); with a serial applier the whole replica would wait. Connects as root over the
server's unix socket (scripts/mariadb_cluster.py's servers). The table is the load writer's app.load_d<domain>;
until it has been replicated there, the lock is retried each period. Runs until SIGTERM or SIGINT; needs PyMySQL.
SIGUSR1 pauses the report (a lock held is let go within a tenth of a second, none is taken until SIGUSR2 resumes it):
the end-to-end suite's moves through server 5 hold it off instead of waiting for a free moment of its cycle.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

import pymysql

#: Bound on connecting and on one statement (LOCK TABLES waits at most this long for the applier's table lock).
CONNECT_TIMEOUT_S = 3
LOCK_WAIT_S = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster-json", type=Path, required=True, help="a cluster.json of scripts/mariadb_cluster.py")
    parser.add_argument("--server", type=int, required=True, help="the replica's number in the cluster")
    parser.add_argument("--domain", type=int, default=1, help="whose table app.load_d<domain> is locked")
    parser.add_argument("--hold-s", type=float, default=8.0)
    parser.add_argument("--period-s", type=float, default=20.0)
    args = parser.parse_args(argv)
    if not 0 < args.hold_s < args.period_s:
        parser.error("need 0 < --hold-s < --period-s")
    server = json.loads(args.cluster_json.read_text())["servers"][args.server - 1]
    table = f"app.load_d{args.domain}"

    stopping = threading.Event()
    paused = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    signal.signal(signal.SIGUSR1, lambda *_: paused.set())
    signal.signal(signal.SIGUSR2, lambda *_: paused.clear())

    def rest(seconds: float) -> None:
        """Waits `seconds`, less once stopping or paused."""
        deadline = time.monotonic() + seconds
        while not stopping.is_set() and not paused.is_set() and (left := deadline - time.monotonic()) > 0:
            stopping.wait(min(left, 0.1))

    held = 0
    while not stopping.is_set():
        if paused.is_set():
            stopping.wait(0.1)
            continue
        try:
            connection = pymysql.connect(
                unix_socket=server["socket"], user="root", connect_timeout=CONNECT_TIMEOUT_S, autocommit=True
            )
        except pymysql.Error as e:
            print(f"server {args.server}: {e}", file=sys.stderr, flush=True)
            rest(args.period_s)
            continue
        try:
            with connection.cursor() as c:
                c.execute("SET SESSION lock_wait_timeout = %s", (LOCK_WAIT_S,))
                c.execute(f"LOCK TABLES {table} READ")
                held += 1
                if held == 1 or held % 30 == 0:
                    print(f"holding {table} on server {args.server} for {args.hold_s} s (time {held})", flush=True)
                rest(args.hold_s)
                c.execute("UNLOCK TABLES")
        except pymysql.Error as e:
            print(f"server {args.server}: {e}", file=sys.stderr, flush=True)
        finally:
            connection.close()  # also releases the lock if UNLOCK TABLES was not reached
        rest(args.period_s - args.hold_s)
    print(f"stopped after holding {table} {held} times", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
