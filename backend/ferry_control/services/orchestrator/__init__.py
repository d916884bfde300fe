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
"""

from ferry_control.services.orchestrator.drill import run_drill
from ferry_control.services.orchestrator.failover import run_failover
from ferry_control.services.orchestrator.parallel_apply import run_parallel_apply
from ferry_control.services.orchestrator.rejoin import run_rejoin
from ferry_control.services.orchestrator.runner import OperationRunner
from ferry_control.services.orchestrator.simple import (
    run_bring_level,
    run_read_only,
    run_repoint,
    run_start_replication,
    run_stop_replication,
)
from ferry_control.services.orchestrator.skip import run_skip_transactions
from ferry_control.services.orchestrator.switchover import run_switchover


def register_executors(runner: OperationRunner) -> None:
    runner.register("switchover", run_switchover)
    runner.register("failover", run_failover)
    runner.register("repoint", run_repoint)
    runner.register("read_only", run_read_only)
    runner.register("start_replication", run_start_replication)
    runner.register("stop_replication", run_stop_replication)
    runner.register("bring_level", run_bring_level)
    runner.register("skip_transactions", run_skip_transactions)
    runner.register("parallel_apply", run_parallel_apply)
    runner.register("drill", run_drill)
    runner.register("rejoin", run_rejoin)
