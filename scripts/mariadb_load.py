#!/usr/bin/env python3
"""The MariaDB demo's load writer: small transactions at a rate that rises and falls, written to every writable
server of a cluster started by scripts/mariadb_cluster.py (its cluster.json), so lag and interleavings move.

    scripts/mariadb_load.py --cluster-json D/cluster.json [--domains 1,2,3] [--rate-min 5] [--rate-max 40]
                            [--period-s 60] [--log-every-s 30]
    scripts/mariadb_load.py --cluster-json D/cluster.json --through HOST:PORT [same options]
                            (as an application would: one address, a proxy's writer frontend; the login from
                            cluster.json)
    FERRY_LOAD_PASSWORD=… scripts/mariadb_load.py --servers HOST:PORT,… --user app [same options]
                            (servers not started by mariadb_cluster.py, e.g. docker compose's `mariadb` profile)

Which servers are written: masters — those that answer `@@read_only = 0` and replicate from nobody (`SHOW ALL SLAVES
STATUS` empty; a replica someone made writable would take errant transactions, so it is never written; a login
without SLAVE MONITOR cannot ask, and then read_only alone decides) — looked up again every `RETARGET_S` and after
any error, so a switchover (the old master read-only, a replica promoted) moves the writes with it. Each transaction
inserts one row into app.load_d<domain> in GTID domain <domain>: with `--domains`, every writable server rotates
through those domains (SET SESSION gtid_domain_id, which the workload user may: BINLOG REPLAY); without, each
server writes in its own default domain (seed000: master 1 in domain 1, master 2 in domain 2). One table per
domain, so the masters of a multi-source replica never write the same rows.

The rate (transactions per second, over all servers) follows a sine between --rate-min and --rate-max over
--period-s, with a burst of three times the maximum for 5 s of every period: replicas fall behind, then catch up.
Runs until SIGTERM or SIGINT; needs PyMySQL (in the control plane's venv).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pymysql

#: How often the writable servers are looked up again.
RETARGET_S = 2.0
#: MariaDB's error for a statement the login lacks the privilege for (SHOW ALL SLAVES STATUS without SLAVE MONITOR).
ER_SPECIFIC_ACCESS_DENIED = 1227
#: Bound on connecting to a server and on one statement.
CONNECT_TIMEOUT_S = 3
STATEMENT_TIMEOUT_S = 5
#: A burst of BURST_FACTOR × the maximum rate for BURST_S of every period.
BURST_FACTOR = 3
BURST_S = 5.0
#: Bound on one sleep between transactions (so a stop signal is seen soon).
SLEEP_MAX_S = 0.5


@dataclass
class Target:
    address: str
    host: str
    port: int
    connection: pymysql.connections.Connection | None = None
    default_domain: int = 0
    #: The domains whose table exists on this server (created once per server and domain).
    ready: set[int] | None = None


def rate_at(elapsed_s: float, rate_min: float, rate_max: float, period_s: float) -> float:
    """Transactions per second at `elapsed_s`: a sine between min and max, with a burst at the end of each period."""
    phase = elapsed_s % period_s
    if phase >= period_s - BURST_S:
        return rate_max * BURST_FACTOR
    return rate_min + (rate_max - rate_min) * (1 - math.cos(2 * math.pi * phase / period_s)) / 2


def split_address(address: str) -> Target:
    host, _, port = address.strip().rpartition(":")
    return Target(address=address.strip(), host=host.strip("[]"), port=int(port))


class Writer:
    def __init__(self, user: str, password: str, addresses: list[str], domains: list[int]):
        self.user, self.password = user, password
        self.domains = domains
        self.targets = [split_address(a) for a in addresses]
        self.writable: list[Target] = []
        self.retargeted_at = 0.0
        self.committed = 0
        self.failed = 0
        self.turn = 0

    def connect(self, target: Target) -> pymysql.connections.Connection:
        if target.connection is None:
            target.connection = pymysql.connect(
                host=target.host, port=target.port, user=self.user, password=self.password, database="app",
                connect_timeout=CONNECT_TIMEOUT_S, read_timeout=STATEMENT_TIMEOUT_S,
                write_timeout=STATEMENT_TIMEOUT_S, autocommit=True,
            )  # fmt: skip
            target.ready = set()
        return target.connection

    def drop(self, target: Target) -> None:
        if target.connection is not None:
            try:
                target.connection.close()
            except pymysql.Error:
                pass
        target.connection = None

    def retarget(self) -> None:
        writable = []
        for target in self.targets:
            try:
                with self.connect(target).cursor() as c:
                    c.execute("SELECT @@read_only, @@gtid_domain_id")
                    read_only, domain = c.fetchone()
                    replicates = False
                    if not int(read_only):
                        try:
                            c.execute("SHOW ALL SLAVES STATUS")
                            replicates = bool(c.fetchall())
                        except pymysql.err.OperationalError as e:
                            if e.args[0] != ER_SPECIFIC_ACCESS_DENIED:
                                raise
                target.default_domain = int(domain)
                if not int(read_only) and not replicates:
                    writable.append(target)
            except pymysql.Error:
                self.drop(target)
        self.writable = writable
        self.retargeted_at = time.monotonic()

    def write_one(self) -> None:
        if time.monotonic() - self.retargeted_at > RETARGET_S:
            self.retarget()
        if not self.writable:
            return
        target = self.writable[self.turn % len(self.writable)]
        domains = self.domains or [target.default_domain]
        domain = domains[(self.turn // len(self.writable)) % len(domains)]
        self.turn += 1
        table = f"load_d{domain}"
        try:
            with self.connect(target).cursor() as c:
                c.execute("SET SESSION gtid_domain_id = %s", (domain,))
                if domain not in target.ready:
                    c.execute(
                        f"CREATE TABLE IF NOT EXISTS {table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                        "written_at DATETIME(6) NOT NULL, note VARCHAR(64) NOT NULL) ENGINE=InnoDB"
                    )
                    target.ready.add(domain)
                c.execute(f"INSERT INTO {table} (written_at, note) VALUES (NOW(6), %s)", (f"from {target.address}",))
            self.committed += 1
        except pymysql.Error as e:
            self.failed += 1
            print(f"{target.address}: {e}", file=sys.stderr, flush=True)
            self.drop(target)
            self.retargeted_at = 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--cluster-json", type=Path, help="a cluster.json of scripts/mariadb_cluster.py")
    source.add_argument("--servers", help="HOST:PORT,… (with --user; password: FERRY_LOAD_PASSWORD)")
    parser.add_argument("--user", help="with --servers: the login that writes (to the app schema)")
    parser.add_argument("--through", help="HOST:PORT of a proxy's writer frontend: written to instead of the servers")
    parser.add_argument("--domains", default="", help="comma-separated GTID domains (default: each server's own)")
    parser.add_argument("--rate-min", type=float, default=5.0)
    parser.add_argument("--rate-max", type=float, default=40.0)
    parser.add_argument("--period-s", type=float, default=60.0)
    parser.add_argument("--log-every-s", type=float, default=30.0)
    args = parser.parse_args(argv)
    if not 0 < args.rate_min <= args.rate_max or args.period_s <= BURST_S:
        parser.error("need 0 < --rate-min <= --rate-max and --period-s > 5")
    domains = [int(d) for d in args.domains.split(",") if d.strip()]
    if args.cluster_json:
        cluster = json.loads(args.cluster_json.read_text())
        login = cluster["users"]["workload"]
        addresses = [args.through] if args.through else [s["address"] for s in cluster["servers"]]
        writer = Writer(login["user"], login["password"], addresses, domains)
    else:
        if not args.user or not os.environ.get("FERRY_LOAD_PASSWORD"):
            parser.error("--servers needs --user and FERRY_LOAD_PASSWORD")
        writer = Writer(args.user, os.environ["FERRY_LOAD_PASSWORD"], args.servers.split(","), domains)

    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    started = last_log = time.monotonic()
    due = started
    while not stopping:
        now = time.monotonic()
        if now < due:
            time.sleep(min(due - now, SLEEP_MAX_S))
            continue
        writer.write_one()
        due += 1.0 / rate_at(now - started, args.rate_min, args.rate_max, args.period_s)
        due = max(due, now - 1.0)  # after a stall, do not try to catch up more than a second's worth
        if now - last_log >= args.log_every_s:
            last_log = now
            names = ", ".join(t.address for t in writer.writable) or "none"
            print(f"committed {writer.committed}, failed {writer.failed}; writing to {names}", flush=True)
    for target in writer.targets:
        writer.drop(target)
    print(f"stopped: committed {writer.committed}, failed {writer.failed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
