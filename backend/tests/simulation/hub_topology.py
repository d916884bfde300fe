"""Generated topologies around a hub (an intermediate master), for the hub switchover's and the hub failover's
schedules: a root master writing one or two domains; a hub replicating from it — and, half the time, from a second
root writing a domain of its own (a multi-source hub, the two-master shape's server 3), else only from the root (a
chain hub); 1–3 replicas of the hub, some delayed on purpose, one perhaps with a replica of its own below it (a
chain); ferryd or MariaDB servers; 1–3 client writers (to whichever server of the cluster is writable: a server of
the hub's tree wrongly made writable would take writes) and one writing the second root's domain. The root is the
one writable server of the moving cluster (group `main`); the second root is of group `other`. Every server starts
caught up, its connections running."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ferry_control.drivers.base import ConnectionSettings
from tests.simulation import replication
from tests.simulation.cluster import Cluster, Writer
from tests.simulation.servers import Connection, Server
from tests.simulation.topology import OTHER_DOMAIN, _copy, _seed_data


@dataclass
class HubTopology:
    root: int
    hub: int
    #: The hub's replicas (control plane ids), and of those the delayed ones (→ delay_s).
    replicas: list[int]
    delays: dict[int, int] = field(default_factory=dict)
    #: A replica of one of the hub's replicas (→ that replica): left where it is by every hub move.
    chained: dict[int, int] = field(default_factory=dict)
    #: The second root a multi-source hub also follows (None: a chain hub).
    other_root: int | None = None
    #: The hub's incoming connections: name → the root it replicates from.
    incoming: dict[str, int] = field(default_factory=dict)
    domains: tuple[int, ...] = (0,)
    #: Each connection's settings as generated ((server id, connection name) → settings): a move carries them.
    settings: dict[tuple[int, str], ConnectionSettings] = field(default_factory=dict)
    #: The candidate named (None: the orchestrator chooses).
    candidate: int | None = None
    mariadb: bool = False

    def roots(self) -> list[int]:
        return [self.root] + ([self.other_root] if self.other_root is not None else [])

    def describe(self, cluster: Cluster) -> str:
        names = {s.id: s.name for s in cluster.servers.values()}
        parts = [
            f"{'MariaDB' if self.mariadb else 'ferryd'} servers", f"root {names[self.root]}",
            f"hub {names[self.hub]} ("
            + ", ".join(f"{name!r} from {names[root]}" for name, root in self.incoming.items()) + ")",
            "its replicas " + ", ".join(names[r] for r in self.replicas),
        ]  # fmt: skip
        if self.delays:
            parts.append("delayed " + ", ".join(f"{names[r]} {d} s" for r, d in self.delays.items()))
        for replica, source in self.chained.items():
            parts.append(f"{names[replica]} replicates from {names[source]}")
        parts.append(f"domains {list(self.domains)}" + (f" and {OTHER_DOMAIN}" if self.other_root else ""))
        parts.append(f"{len(cluster.writers)} writers")
        parts.append("candidate " + (names[self.candidate] if self.candidate else "chosen by the orchestrator"))
        return "; ".join(parts)


def _follow(cluster: Cluster, topology: HubTopology, replica: Server, master: Server, name: str, delay_s: int) -> None:
    """`replica` replicates from `master` over `name`, with settings of its own (a heartbeat, a parallel mode: what
    a move must carry over, less the delay and filters where it re-creates the connection elsewhere)."""
    latency_s = cluster.rng.uniform(0.0005, 0.004)
    pick = random.Random(latency_s)  # drawn from the latency: the schedule's own stream is not moved on
    settings = ConnectionSettings(
        delay_s=delay_s, heartbeat_ms=pick.choice((None, 500, 2000)), parallel_mode=pick.choice((None, "optimistic"))
    )
    connection = Connection(
        name=name, master_address=master.address, settings=settings, latency_s=latency_s, running=True
    )
    replica.connections[name] = connection
    topology.settings[(replica.id, name)] = settings
    replication.connect(replica, connection, master, 0.0)


def generate_hub(rng: random.Random) -> tuple[Cluster, HubTopology]:
    cluster = Cluster(rng)
    replicas = rng.randint(1, 3)
    multi = rng.random() < 0.5
    chain = rng.random() < 0.25
    count = 2 + replicas + (1 if chain else 0) + (1 if multi else 0)
    server_ids = rng.sample(range(1, 500), count)

    def add(index: int, group: str) -> Server:
        return cluster.add(Server(id=index + 1, server_id=server_ids[index], name=f"db{index + 1}",
                                  host=f"10.0.0.{index + 1}", group=group))  # fmt: skip

    root, hub = add(0, "main"), add(1, "main")
    below = [add(2 + i, "main") for i in range(replicas)]
    root.read_only = False
    domains = (0,) if rng.random() < 0.6 else (0, 1)
    for domain in domains:
        _seed_data(root, domain, rng.randint(0, 30))
    topology = HubTopology(root=root.id, hub=hub.id, replicas=[r.id for r in below], domains=domains)
    names = ["", "main", "src"]
    first = rng.choice(names)
    _copy(hub, root, set(domains))
    _follow(cluster, topology, hub, root, first, 0)
    topology.incoming[first] = root.id
    other = None
    if multi:
        other = add(count - 1, "other")
        other.read_only = False
        _seed_data(other, OTHER_DOMAIN, rng.randint(1, 10))
        _copy(hub, other, {OTHER_DOMAIN})
        second = rng.choice([n for n in ("b", "other", "m2") if n != first])
        _follow(cluster, topology, hub, other, second, 0)
        topology.incoming[second] = other.id
        topology.other_root = other.id
        cluster.writers.append(Writer(0, OTHER_DOMAIN, rng.uniform(0.01, 0.05), rng.uniform(0, 0.01), (other.id,)))
    every = set(domains) | ({OTHER_DOMAIN} if multi else set())
    # The hub's replicas name their connection to it as the cluster does (one name, or each its own).
    replica_names = rng.sample(names, 1) if rng.random() < 0.7 else names
    for index, replica in enumerate(below):
        if index > 0 and rng.random() < 0.2:  # the first is never delayed: a switchover has a candidate
            topology.delays[replica.id] = rng.randint(1, 2)
        _copy(replica, hub, every)
        _follow(cluster, topology, replica, hub, rng.choice(replica_names), topology.delays.get(replica.id, 0))
    if chain:
        tail = add(2 + replicas, "main")
        source = rng.choice([r for r in below if r.id not in topology.delays])
        _copy(tail, source, every)
        _follow(cluster, topology, tail, source, rng.choice(replica_names), 0)
        topology.chained[tail.id] = source.id
    main_ids = tuple(s.id for s in cluster.main())
    for index in range(rng.randint(1, 3)):
        period = rng.uniform(0.005, 0.04)
        cluster.writers.append(Writer(index + 1, rng.choice(domains), period, rng.uniform(0, period), main_ids))
    eligible = [r.id for r in below if r.id not in topology.delays]
    pick = rng.random()
    if pick < 0.1 and topology.delays:
        topology.candidate = rng.choice(list(topology.delays))
    elif pick < 0.5:
        topology.candidate = rng.choice(eligible)
    topology.mariadb = rng.random() < 0.4
    return cluster, topology
