"""The orchestrator: operations that change a cluster, run in the background and recorded step by step.

- `runner`     background tasks, live steps, the cluster lock's lease, webhooks around operations
- `snapshot`   a live picture of a cluster: every server polled now, links, which one is the master
- `gtid`       errant GTIDs per domain, ahead-of-all, leveling plans (START … UNTIL from a peer)
- `actions`    bounded waits, in-flight commits, promotion, repointing, leveling, convergence checks
- `switchover` preflight checks and the planned switchover with undo
- `failover`   confirmation by the replicas, the most advanced candidate, fencing, the lost-GTID report
- `simple`     read-only, start/stop replication, repoint, bring level
- `skip`       skip the transaction(s) that stopped a replica, then start it again
- `parallel_apply`  a connection's parallel apply changed online; `catch_up_parallel` raises it for a catch-up
- `drill`      canaries, switchover, verification (canaries, checksums, GTIDs), switch back, figures
- `rejoin`     a fenced former master back as a replica, unless it has transactions the new master lacks
- `prepare`    the catch-up before a switchover's window (`catch_up_rates`: its arithmetic)
- `monitor`    after each collector cycle: fencing, automatic rejoin and automatic failover detection
- `hooks`      webhook calls
- `kinds`      every operation kind declared once: its models, executor, repair and API route
- `repairs`    what a reconcile does per kind with what a dead instance left
"""

from ferry_control.services.orchestrator.kinds import register_executors

__all__ = ["register_executors"]
