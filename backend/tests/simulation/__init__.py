"""A seeded simulation of the orchestrator: the real switchover and failover (of a master, or of a hub), their
compensations and the reconciler, run against an in-memory cluster on virtual time, with faults, and checked against
invariants after every schedule.

- `clock`        the virtual-time event loop; the orchestrator's modules read its clock while a schedule runs
- `servers`      one server: binlog, GTID positions, read-only, commits in flight, replication connections, down
- `replication`  how a connection connects, receives and applies (strict mode, delay, UNTIL, filters)
- `cluster`      the servers, client writers and proxies, moved forward lazily in time
- `faults`       unreachable servers, lost answers, an API instance crashing (between steps or inside a call) — for
                 good, or paused and waking up after another instance's reconcile took its cluster over
- `driver`       `ServerDriver` over the cluster (ferryd's or MariaDB's behaviour), and its factory
- `proxies`      HAProxy's runtime commands (routing.py's) answered by the simulated proxies
- `context`      the real `OperationContext` with the record and cluster rows replaced (its fencing is the real one)
- `topology`     generated topologies, writers and switchover parameters
- `invariants`   what must hold after a schedule, as typed violations
- `schedule`     one seeded schedule start to end (operation, crash, reconcile, settle, check), and many
- `failover_schedule`   the same for a failover: the master lost (crashed or cut off), a replica perhaps crashing, the
                 old master perhaps answering again and the failover monitor's fencing pass
- `failover_invariants` what must hold after a failover (writes only the lost master had are its RPO, counted)
- `hub_topology` generated topologies around a hub (multi-source or chain), its replicas, delayed ones, a chain
- `hub_schedule` the same for the hub moves: a hub switchover, or a hub failover (the hub lost), with the reconcile
- `hub_invariants` what must hold after a hub move (the hub's replicas follow a live source or are fenced, nothing
                 errant or lost, never two writable servers, the record true)
- `database`     the rows a failover reads and writes (fenced flag, suspension, links), and the cluster's operation
                 lock (holder, lease, fencing token) the real repository's statements read and change, in memory
- `wake`         the lock's side of a schedule (the runner's heartbeat, a reconcile's takeover), the paused instance
                 waking up, and the fencing invariant: after a takeover only the lock's holder changes a server
- `known`        violations of known open bugs, each with the seed that shows it
"""
