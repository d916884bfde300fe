"""Every operation kind, declared once: one `OperationKind` per kind in `KINDS`, from which each registry is derived —
the runner's executors (`register_executors`), the reconcile's repairs (`repair_of`), the API's start routes (their
path, route name — so the operationId and the audit action —, body and precheck) and the API's enum of types.

A kind's read model (a subclass of `schemas.operation.OperationReadBase`, a member of `AnyOperation` by being
defined) names it (`type`) and carries its parameters and result models; the schemas' `VARIANTS`, `PARAMS`,
`RESULTS` and `OPERATION_TYPES` are read from those read models, and a test holds them and `KINDS` to the same kinds
(docs/architecture.md: adding an operation kind)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from ferry_control.schemas.operation import (
    PARALLEL_APPLY_DESCRIPTION,
    REBUILD_DESCRIPTION,
    SKIP_TRANSACTIONS_DESCRIPTION,
    BringLevelOperation,
    BringLevelRequest,
    ConsistencyCheckOperation,
    ConsistencyCheckRequest,
    DrillOperation,
    FailoverOperation,
    FailoverRequest,
    OperationParams,
    OperationReadBase,
    OperationRequest,
    ParallelApplyOperation,
    ParallelApplyRequest,
    ReadOnlyOperation,
    ReadOnlyRequest,
    RebuildOperation,
    RebuildRequest,
    RejoinOperation,
    RejoinRequest,
    RepointOperation,
    RepointRequest,
    SkipTransactionsOperation,
    SkipTransactionsRequest,
    StartReplicationOperation,
    StartReplicationRequest,
    StopReplicationOperation,
    StopReplicationRequest,
    SwitchoverOperation,
    SwitchoverRequest,
)
from ferry_control.schemas.operation_results import OperationResult
from ferry_control.services.operation_prechecks import precheck_parallel_apply, precheck_skip_transactions
from ferry_control.services.orchestrator.consistency import repair_consistency_check, run_consistency_check
from ferry_control.services.orchestrator.drill import run_drill
from ferry_control.services.orchestrator.failover import run_failover
from ferry_control.services.orchestrator.parallel_apply import run_parallel_apply
from ferry_control.services.orchestrator.rebuild import repair_rebuild, run_rebuild
from ferry_control.services.orchestrator.rejoin import run_rejoin
from ferry_control.services.orchestrator.repairs import Repair, repair_failover, repair_switch
from ferry_control.services.orchestrator.runner import Executor, OperationRunner
from ferry_control.services.orchestrator.simple import (
    run_bring_level,
    run_read_only,
    run_repoint,
    run_start_replication,
    run_stop_replication,
)
from ferry_control.services.orchestrator.skip import run_skip_transactions
from ferry_control.services.orchestrator.switchover import run_switchover

#: Checks a request against the live servers before the operation is accepted (a precise 4xx, nothing recorded):
#: `precheck(session, drivers, settings, cluster_id, params)`.
Precheck = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class Route:
    """How the API starts a kind: `POST …/operations/{type-with-dashes}` with a body of `request`."""

    request: type[OperationRequest]
    summary: str
    description: str | None = None
    precheck: Precheck | None = None


@dataclass(frozen=True)
class OperationKind:
    """One kind of operation: what it is read as, what runs it, what a reconcile does with what it left, and how the
    API starts it (None: not through the operations routes — a drill is started by its schedule or `POST …/drills`)."""

    read: type[OperationReadBase]
    executor: Executor
    route: Route | None
    #: None: one move an operator may simply repeat, examined only by a reconcile.
    repair: Repair | None = None

    @property
    def name(self) -> str:
        (name,) = get_args(self.read.model_fields["type"].annotation)
        return str(name)

    @property
    def params(self) -> type[OperationParams]:
        params: type[OperationParams] = self.read.model_fields["params"].annotation  # type: ignore[assignment]
        return params

    @property
    def result(self) -> type[OperationResult]:
        annotation: Any = self.read.model_fields["result"].annotation
        result: type[OperationResult] = next(a for a in get_args(annotation) if a is not type(None))
        return result


KINDS: tuple[OperationKind, ...] = (
    OperationKind(
        SwitchoverOperation, run_switchover, repair=repair_switch, route=Route(
            SwitchoverRequest,
            summary="Planned switchover to a candidate (or the best replica)",
            description="Preflight checks (expected master, candidate healthy and replicating, errant GTIDs per "
            "domain, lag under the limit, replicas reachable), pre-hooks, old master read-only, in-flight commits, the "
            "candidate reaches the old master's position (else undo), promotion, replicas repointed, old master "
            "follows, verification.",
        ),
    ),
    OperationKind(
        FailoverOperation, run_failover, repair=repair_failover, route=Route(
            FailoverRequest,
            summary="Failover from a lost master to the most advanced replica",
            description="Refused while the master answers or a replica is still connected to it. Replicas apply what "
            "they received, the most advanced (leveled from its peers where none is ahead in every domain) is "
            "promoted, the others follow it, the old master is fenced, and the GTIDs that may be lost are reported.",
        ),
    ),
    OperationKind(
        RepointOperation, run_repoint,
        route=Route(RepointRequest, summary="Make a server replicate from another master (by GTID)"),
    ),
    OperationKind(
        ReadOnlyOperation, run_read_only,
        route=Route(ReadOnlyRequest, summary="Turn a server's read-only flag on or off"),
    ),
    OperationKind(
        RejoinOperation, run_rejoin, route=Route(
            RejoinRequest,
            summary="Bring a fenced former master back as a read-only replica of the new master",
            description="Compares its GTIDs with the source's per domain (binlog states): with nothing only it has, it "
            "replicates from the source (current_pos, the cluster's connection conventions and a sibling's "
            "replica-side settings), stays read-only and is no longer fenced; with transactions only it has "
            "(acknowledged before it was replaced, never replicated), nothing is changed and they are listed per "
            "domain with their GTIDs, times and tables. The cluster's `auto_rejoin` starts it by itself when a fenced "
            "server answers again.",
        ),
    ),
    OperationKind(
        StartReplicationOperation, run_start_replication,
        route=Route(StartReplicationRequest, summary="Start a replication connection (optionally UNTIL a position)"),
    ),
    OperationKind(
        StopReplicationOperation, run_stop_replication,
        route=Route(StopReplicationRequest, summary="Stop a replication connection"),
    ),
    OperationKind(
        BringLevelOperation, run_bring_level,
        route=Route(
            BringLevelRequest, summary="Bring a server level with another (START … UNTIL its position, then wait)"
        ),
    ),
    OperationKind(
        SkipTransactionsOperation, run_skip_transactions, route=Route(
            SkipTransactionsRequest,
            summary="Skip the transaction(s) that stopped a replica's connection, then start it again (loses them "
            "there)",
            description=SKIP_TRANSACTIONS_DESCRIPTION,
            precheck=precheck_skip_transactions,
        ),
    ),
    OperationKind(
        ParallelApplyOperation, run_parallel_apply, route=Route(
            ParallelApplyRequest,
            summary="Change a replica connection's parallel apply online (mode, workers, at most per domain)",
            description=PARALLEL_APPLY_DESCRIPTION,
            precheck=precheck_parallel_apply,
        ),
    ),
    OperationKind(
        RebuildOperation, run_rebuild, repair=repair_rebuild, route=Route(
            RebuildRequest,
            summary="Rebuild a replica from a donor (its data replaced by a copy), then replicate from the copy's "
            "position",
            description=REBUILD_DESCRIPTION,
        ),
    ),
    # A drill's result is a switchover's too (`SwitchesMaster`): a failover drill's failover is one move of its own.
    OperationKind(
        ConsistencyCheckOperation, run_consistency_check, repair=repair_consistency_check, route=Route(
            ConsistencyCheckRequest,
            summary="Compare a replica with its source, table by table and chunk by chunk, at the same GTID position",
            description="Per batch of primary-key chunks: the source's checksums in one consistent read (nothing "
            "written or locked), which names its GTID position; the replica's connection stopped and started UNTIL "
            "that position, the same chunks read there, the connection started again (on any exit). Drifted chunks "
            "are listed per table with their key range; any drift ends it failed (nothing changed). Ferry starts one "
            "by itself after a rejoin or a rebuild (the `verify_after_rejoin` setting).",
        ),
    ),
    OperationKind(DrillOperation, run_drill, repair=repair_switch, route=None),
)  # fmt: skip

#: Each kind by its name.
BY_NAME: Mapping[str, OperationKind] = {k.name: k for k in KINDS}


def register_executors(runner: OperationRunner) -> None:
    """The runner runs each kind with its declared executor."""
    for kind in KINDS:
        runner.register(kind.name, kind.executor)


def repair_of(type_: str) -> Repair | None:
    """What a reconcile does with what an operation of `type_` left (None: examined only)."""
    kind = BY_NAME.get(type_)
    return None if kind is None else kind.repair
