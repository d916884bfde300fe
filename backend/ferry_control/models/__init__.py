"""SQLAlchemy 2 typed ORM models; importing this package registers every table on `Base.metadata`."""

from ferry_control.core.enums import HealthState, LinkSource, OperationState, PromotionRule, ServerKind, ServerOrigin
from ferry_control.models.api_token import ApiToken
from ferry_control.models.audit import AuditEntry
from ferry_control.models.base import Base
from ferry_control.models.cluster import Cluster, OperationLock
from ferry_control.models.coordination import CollectorCycleRow, RelayedEvent
from ferry_control.models.drill import DrillRun, DrillSchedule
from ferry_control.models.lease import COLLECTOR_LEASE, ServiceLease
from ferry_control.models.operation import Operation
from ferry_control.models.replica_guard import ReplicaGuard
from ferry_control.models.replication import ReplicationLink
from ferry_control.models.rewind_archive import RewindArchive
from ferry_control.models.samples import LagSample, PositionSample
from ferry_control.models.server import HealthEvent, Server

__all__ = [
    "COLLECTOR_LEASE",
    "ApiToken",
    "AuditEntry",
    "Base",
    "Cluster",
    "CollectorCycleRow",
    "DrillRun",
    "DrillSchedule",
    "HealthEvent",
    "HealthState",
    "LagSample",
    "LinkSource",
    "Operation",
    "OperationLock",
    "OperationState",
    "PositionSample",
    "RelayedEvent",
    "ReplicaGuard",
    "ReplicationLink",
    "RewindArchive",
    "Server",
    "ServerKind",
    "PromotionRule",
    "ServerOrigin",
    "ServiceLease",
]
