"""Change consumer shapes: the applications reading a server's committed changes apart from its replicas, as the API
shows them (`ServerConsumersRead`, GET …/servers/{id}/consumers, read live from the server), and what a switchover's
plan says of each (`PlanConsumer`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class ConsumerLagRead(BaseModel):
    transactions: int = Field(description="Transactions behind the server's binlog in this domain.", examples=[3])
    seconds: float = Field(
        description="Now minus the commit time of the last transaction sent to it (0 when caught up).", examples=[0.4]
    )


class ConsumerRead(BaseModel):
    """A change consumer streaming from the server now."""

    name: str = Field(examples=["cache-invalidator"])
    address: str = Field(description="Where it connected from.", examples=["10.0.0.9:51234"])
    domains: list[int] = Field(description="The domains it follows (empty: every domain).", examples=[[1]])
    start_position: str = Field(description="The position it subscribed from.", examples=["1-1-40"])
    position: str = Field(description="The newest GTID per domain sent to it.", examples=["1-1-97"])
    connected_at: datetime
    transactions_sent: int
    lag: dict[str, ConsumerLagRead] = Field(description="Per domain (its own when it named some).")


class CutOffConsumerRead(BaseModel):
    """A consumer the server cut off for not reading (it subscribes again from `position`)."""

    name: str
    address: str
    position: str
    at: datetime
    reason: str


class ServerConsumersRead(BaseModel):
    """A server's change consumers, read from it now."""

    registered_server_id: int
    label: str
    kind: str
    supported: bool = Field(
        description="False when the server's kind does not tell change consumers apart from its replicas (MariaDB: "
        "a binlog reader such as Debezium connects as a replica and is listed among them)."
    )
    words: str = Field(description="The list in a sentence, or why there is none.")
    consumers: list[ConsumerRead]
    cut_off: list[CutOffConsumerRead] = Field(description="The last ones cut off, oldest first.")
    cut_off_total: int = Field(description="Consumers cut off since the server started.")
    consumers_max: int | None = Field(description="How many the server streams to at once at most (None: not said).")


class PlanConsumer(BaseModel):
    """A change consumer connected to a server of a switchover, as its plan sees it before anything moves."""

    server: str = Field(description="The server it streams from now (by label).")
    name: str
    address: str
    position: str
    afterwards: str = Field(description="What the move does to its stream, in words.")
