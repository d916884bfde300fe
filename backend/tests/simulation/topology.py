"""Generated topologies: ferryd or MariaDB servers (driver.py), a master with 1–4 replicas, some delayed on purpose
(MASTER_DELAY), some replicating from another replica (a chain), sometimes one replica that also follows a second
root writing a domain of its own (multi-source), one or two GTID domains, 0–2 proxies in front, 1–3 client writers
(through a proxy when there is one), and the switchover's candidate (named, or left to the orchestrator) and source
(named when there are two roots). Every server starts caught up, its connections running."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ferry_control.drivers.base import ConnectionSettings
from tests.simulation import replication
from tests.simulation.cluster import Cluster, Proxy, Writer
from tests.simulation.servers import Connection, Server

#: The domain the second root of a multi-source replica writes.
OTHER_DOMAIN = 7
#: The simulated cluster's control plane id (in proxy commands).
CLUSTER_ID = 1


@dataclass
class Topology:
    master: int
    replicas: list[int]
    #: Delayed replicas (control plane id → delay_s).
    delays: dict[int, int] = field(default_factory=dict)
    #: Replicas of a replica (control plane id → its intermediate master's), not of the master itself.
    chained: dict[int, int] = field(default_factory=dict)
    #: The replica that also follows `other_root`, and that root.
    multi_source: int | None = None
    other_root: int | None = None
    domains: tuple[int, ...] = (0,)
    proxies: list[str] = field(default_factory=list)
    #: The candidate named in the switchover (None: the orchestrator chooses), and the source named (always with a
    #: second root: the operator has to say which master's role moves).
    candidate: int | None = None
    source: int | None = None
    #: The servers behave as MariaDB's (else as ferryd's; driver.py says how they differ).
    mariadb: bool = False

    def describe(self, cluster: Cluster) -> str:
        names = {s.id: s.name for s in cluster.servers.values()}
        parts = [
            f"{'MariaDB' if self.mariadb else 'ferryd'} servers", f"master {names[self.master]}",
            "replicas " + ", ".join(names[r] for r in self.replicas),
        ]  # fmt: skip
        if self.delays:
            parts.append("delayed " + ", ".join(f"{names[r]} {d} s" for r, d in self.delays.items()))
        for replica, source in self.chained.items():
            parts.append(f"{names[replica]} replicates from {names[source]}")
        if self.multi_source is not None and self.other_root is not None:
            parts.append(f"{names[self.multi_source]} also follows {names[self.other_root]}")
        parts.append(f"domains {list(self.domains)}")
        parts.append(f"{len(self.proxies)} proxies")
        parts.append(f"{len(cluster.writers)} writers")
        parts.append("candidate " + (names[self.candidate] if self.candidate else "chosen by the orchestrator"))
        if self.source is not None:
            parts.append(f"source {names[self.source]} named")
        return "; ".join(parts)


def _seed_data(server: Server, domain: int, count: int) -> None:
    for _ in range(count):
        server.commit(domain, -1.0)


def _copy(replica: Server, source: Server, domains: set[int]) -> None:
    for entry in source.binlog:
        if entry.gtid[0] in domains and entry.gtid not in replica.index:
            replica.log(entry.gtid, entry.committed_at, entry.logged_at)
            replica.slave_pos[entry.gtid[0]] = entry.gtid


def _follow(cluster: Cluster, replica: Server, master: Server, name: str, delay_s: int) -> None:
    connection = Connection(
        name=name, master_address=master.address, settings=ConnectionSettings(delay_s=delay_s),
        latency_s=cluster.rng.uniform(0.0005, 0.004), running=True,
    )  # fmt: skip
    replica.connections[name] = connection
    replication.connect(replica, connection, master, 0.0)


def generate(rng: random.Random) -> tuple[Cluster, Topology]:
    cluster = Cluster(rng)
    replicas = rng.randint(1, 4)
    multi = replicas >= 2 and rng.random() < 0.3
    count = 1 + replicas + (1 if multi else 0)
    server_ids = rng.sample(range(1, 500), count)
    servers = [
        Server(id=i + 1, server_id=server_ids[i], name=f"db{i + 1}", host=f"10.0.0.{i + 1}", group="main")
        for i in range(1 + replicas)
    ]
    for server in servers:
        cluster.add(server)
    master, others = servers[0], servers[1:]
    master.read_only = False
    domains = (0,) if rng.random() < 0.6 else (0, 1)
    for domain in domains:
        _seed_data(master, domain, rng.randint(0, 30))
    topology = Topology(master=master.id, replicas=[r.id for r in others], domains=domains)
    for replica in others[1:]:  # the first is never delayed: a switchover always has an eligible candidate
        if rng.random() < 0.2:
            topology.delays[replica.id] = rng.randint(1, 2)
    names = rng.sample(["", "main", "src"], 1) if rng.random() < 0.7 else ["", "main", "src"]
    for index, replica in enumerate(others):
        _copy(replica, master, set(domains))
        source = master
        intermediates = [r for r in others[:index] if r.id not in topology.delays and r.id not in topology.chained]
        if intermediates and rng.random() < 0.2:
            source = rng.choice(intermediates)
            topology.chained[replica.id] = source.id
        _follow(cluster, replica, source, rng.choice(names), topology.delays.get(replica.id, 0))
    if multi:
        root = cluster.add(Server(id=count, server_id=server_ids[-1], name=f"db{count}", host=f"10.0.0.{count}",
                                  group="other"))  # fmt: skip
        root.read_only = False
        _seed_data(root, OTHER_DOMAIN, rng.randint(1, 10))
        chosen = rng.choice([r for r in others if r.id not in topology.delays and r.id not in topology.chained])
        _copy(chosen, root, {OTHER_DOMAIN})
        taken = set(chosen.connections)
        _follow(cluster, chosen, root, next(n for n in ("b", "other", "m2") if n not in taken), 0)
        topology.multi_source, topology.other_root = chosen.id, root.id
        cluster.writers.append(Writer(0, OTHER_DOMAIN, rng.uniform(0.01, 0.05), rng.uniform(0, 0.01), (root.id,)))
    for index in range(rng.choice((0, 0, 1, 2))):
        name = f"proxy{index + 1}"
        cluster.proxies[name] = Proxy(name, CLUSTER_ID, {s.id: "ready" for s in servers})
        topology.proxies.append(name)
    main_ids = tuple(s.id for s in servers)
    for index in range(rng.randint(1, 3)):
        proxy = rng.choice(topology.proxies) if topology.proxies else None
        period = rng.uniform(0.005, 0.04)
        cluster.writers.append(
            Writer(index + 1, rng.choice(domains), period, rng.uniform(0, period), main_ids, proxy=proxy)
        )
    eligible = [r.id for r in others if r.id not in topology.delays and r.id not in topology.chained]
    delayed = [r for r in topology.delays if r not in topology.chained]
    pick = rng.random()
    if pick < 0.1 and delayed:
        topology.candidate = rng.choice(delayed)
    elif pick < 0.6 and eligible:
        topology.candidate = rng.choice(eligible)
    if multi or rng.random() < 0.3:
        topology.source = master.id
    topology.mariadb = rng.random() < 0.4
    return cluster, topology
