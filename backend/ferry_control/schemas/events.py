"""A cluster's events as its SSE stream sends them (GET /clusters/{id}/events): the event types, and the data of each
(a JSON object with `event`, `cluster_id`, `at` and the type's fields). The bus, the relay between instances and the
stream carry these models; `ClusterEventData` (discriminated by `event`) is the stream's schema in the OpenAPI."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

from ferry_control.schemas.operation import OperationStep
from ferry_control.schemas.registered_ids import read_old_names


class EventType(enum.StrEnum):
    #: The stream is open: from now on it sends every change (the stream's own, first).
    subscribed = "subscribed"
    position = "position"
    health = "health"
    read_only = "read_only"
    fenced = "fenced"
    maintenance = "maintenance"
    link = "link"
    operation = "operation"
    drill = "drill"
    failover_not_confirmed = "failover_not_confirmed"
    alert = "alert"
    replica_guard = "replica_guard"
    errant = "errant"
    #: The caller's token was revoked or expired: the stream ends (the stream's own).
    token_invalid = "token_invalid"


class EventData(BaseModel):
    """What every event's data has besides its type's fields. Data relayed by an instance still naming registered
    servers' ids `server_id` (`…_server_id`) is read under their names now (schemas/registered_ids.py)."""

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, value: Any) -> Any:
        return read_old_names(cls.model_fields, value)

    event: EventType
    cluster_id: int | None = Field(None, description="Set as the stream sends it.")
    at: datetime | None = Field(None, description="When it was published (UTC); set as the stream sends it.")
    truncated: bool | None = Field(
        None, description="Relayed from another instance too big for one notification: its scalar fields only."
    )

    def fields(self) -> dict[str, Any]:
        """The type's fields that were given, as JSON (no `event`, `cluster_id` or `at`)."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"event", "cluster_id", "at"})


class SubscribedEvent(EventData):
    event: Literal[EventType.subscribed] = EventType.subscribed


class PositionEvent(EventData):
    """A server's GTID position changed in a domain (its gtid_current_pos)."""

    event: Literal[EventType.position] = EventType.position
    registered_server_id: int
    domain: int
    gtid: str
    seq_no: int | None = None


class HealthEvent(EventData):
    event: Literal[EventType.health] = EventType.health
    registered_server_id: int
    state: str = Field(examples=["unreachable"])
    previous: str | None = None
    detail: str | None = None


class ReadOnlyEvent(EventData):
    event: Literal[EventType.read_only] = EventType.read_only
    registered_server_id: int
    read_only: bool


class FencedEvent(EventData):
    """A fenced server answered writable and was made read-only again."""

    event: Literal[EventType.fenced] = EventType.fenced
    registered_server_id: int
    read_only: bool
    reason: str | None = None


class MaintenanceEvent(EventData):
    """A server's maintenance started or ended: by an operator, or by itself at its end (`by`: `expiry`)."""

    event: Literal[EventType.maintenance] = EventType.maintenance
    registered_server_id: int
    maintenance: bool
    by: Literal["operator", "expiry"]
    owner: str | None = None
    reason: str | None = None
    until: datetime | None = None


class LinkEvent(EventData):
    """A replication connection appeared, changed state or lag, or went away (`removed`)."""

    event: Literal[EventType.link] = EventType.link
    link_id: int
    replica_registered_server_id: int
    master_registered_server_id: int | None = None
    connection: str | None = None
    removed: bool | None = None
    running: bool | None = None
    io_state: str | None = None
    sql_state: str | None = None
    waiting_for_relay_space: bool | None = None
    lag: dict[str, Any] | None = Field(None, description="Per domain: seconds, transactions, reported_seconds.")
    last_error_code: str | None = None


class OperationEvent(EventData):
    """An operation's state or one of its steps changed."""

    event: Literal[EventType.operation] = EventType.operation
    operation_id: int
    type: str = Field(examples=["switchover"])
    state: str = Field(examples=["running"])
    steps: list[OperationStep] | None = None


class DrillEvent(EventData):
    event: Literal[EventType.drill] = EventType.drill
    drill_run_id: int
    operation_id: int
    state: str = Field(examples=["running"])


class FailoverNotConfirmedEvent(EventData):
    """The master looked lost to the control plane only: nothing was done."""

    event: Literal[EventType.failover_not_confirmed] = EventType.failover_not_confirmed
    registered_server_id: int
    detail: str


class AlertEvent(EventData):
    event: Literal[EventType.alert] = EventType.alert
    kind: Literal["operation_interrupted"]
    operation_id: int
    type: str
    message: str


class ReplicaGuardEvent(EventData):
    """A replica was seen writable: made read-only again (`enforced`), or the attempt failed (`failed`), or it was
    only flagged (`flagged`: the cluster's enforce_read_only_replicas is off, or the server is in maintenance), or
    the guard gave the flag back (`withdrawn`: an operation promoted the server meanwhile)."""

    event: Literal[EventType.replica_guard] = EventType.replica_guard
    registered_server_id: int
    action: Literal["enforced", "failed", "flagged", "withdrawn"]
    detail: str


class ErrantEvent(EventData):
    """A server's errant transactions (its own writes no master of it has) were found, changed or are gone."""

    event: Literal[EventType.errant] = EventType.errant
    registered_server_id: int
    domains: list[dict[str, Any]] = Field(
        description="Per domain: domain, server_id (its own, in these GTIDs), first_gtid, last_gtid, transactions, "
        "since (empty: none now)."
    )


class TokenInvalidEvent(EventData):
    event: Literal[EventType.token_invalid] = EventType.token_invalid
    message: str


AnyEventData = Annotated[
    SubscribedEvent | PositionEvent | HealthEvent | ReadOnlyEvent | FencedEvent | MaintenanceEvent | LinkEvent
    | OperationEvent | DrillEvent | FailoverNotConfirmedEvent | AlertEvent | ReplicaGuardEvent | ErrantEvent
    | TokenInvalidEvent,
    Field(discriminator="event"),
]  # fmt: skip
#: Each event type's data.
EVENT_DATA: dict[EventType, type[EventData]] = {
    EventType.subscribed: SubscribedEvent,
    EventType.position: PositionEvent,
    EventType.health: HealthEvent,
    EventType.read_only: ReadOnlyEvent,
    EventType.fenced: FencedEvent,
    EventType.maintenance: MaintenanceEvent,
    EventType.link: LinkEvent,
    EventType.operation: OperationEvent,
    EventType.drill: DrillEvent,
    EventType.failover_not_confirmed: FailoverNotConfirmedEvent,
    EventType.alert: AlertEvent,
    EventType.replica_guard: ReplicaGuardEvent,
    EventType.errant: ErrantEvent,
    EventType.token_invalid: TokenInvalidEvent,
}


class ClusterEventData(RootModel[AnyEventData]):
    """One server-sent event's data: its name is the `event` field, the rest its type's."""
