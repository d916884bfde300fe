"""Change subscriptions for Python applications (docs/protocol.md, "Change subscriptions"; the Rust client's
`ferry_client::Subscription` and `MasterSubscription`): a cluster's committed transactions, in each domain's order,
with their row images and the position to store beside what the application derives from them. Subscribing again
from a stored position continues just after it, so an application that stores the position in the same transaction
as its own data receives each transaction exactly once across restarts.

- `Subscription`: one node's stream, an async iterator of `(Change, position)`.
- `MasterSubscription`: the same through whichever of the given nodes is the master (writable, replicating from
  nobody); after a switchover or a failover it subscribes to the new master from its own position. A refusal that
  another node or another try cannot fix (the position purged, ahead of the new master or diverged from it — a
  failover lost what this consumer had seen — a wrong token, a bad request) ends it with the node's error.

Every transaction is checked (each event's checksum, its shape) and decoded by ferry-core (`StreamTxn.decode`);
nothing of the binlog format is copied here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from ferry_control.core.gtid import by_domain, canonical, from_gtids, parse_gtid
from ferry_control.drivers.ferry_protocol import (
    FerryProtocolClient,
    ProtocolError,
    ProtocolRefused,
    StreamHeartbeat,
)

#: Refusals that end following: another node or another try would get the same answer.
FINAL_REFUSALS = frozenset(
    {"POSITION_PURGED", "REPLICA_AHEAD", "DIVERGED", "BAD_GTID", "INVALID_REQUEST", "PERMISSION_DENIED"}
    | {"UNKNOWN_OPERATION"}
)
#: A node silent for this many heartbeat intervals (plus a second) is taken for gone.
HEARTBEATS_MISSED_MAX = 3
#: Shortest and longest heartbeat interval a node grants (docs/protocol.md).
HEARTBEAT_S_MIN, HEARTBEAT_S_MAX = 0.05, 60.0


@dataclass(frozen=True)
class RowChange:
    """One row's change: its images before and after (None: the row did not exist / was deleted)."""

    table: str
    key: str
    before: Mapping[str, int | str] | None
    after: Mapping[str, int | str] | None


@dataclass(frozen=True)
class Change:
    """One committed transaction."""

    gtid: str
    domain: int
    #: The master's commit group.
    commit_id: int
    #: Commit time on the server that first committed it, microseconds since the Unix epoch.
    commit_ts_us: int
    rows: tuple[RowChange, ...]


def is_final(error: ProtocolError) -> bool:
    """Whether a subscription's error ends following (see `FINAL_REFUSALS`)."""
    return isinstance(error, ProtocolRefused) and error.name in FINAL_REFUSALS


def advance(position: str, gtid: str) -> str:
    """`position` with `gtid` as its domain's GTID (canonical text)."""
    gtids = by_domain(position)
    new = parse_gtid(gtid)
    gtids[new.domain] = new
    return str(from_gtids(gtids.values()))


def _canonical_start(start: str | None) -> str | None:
    """The start position as canonical text; bad text raises `GtidParseError` (a ValueError) naming the character."""
    return None if start is None else canonical(start)


def _check_heartbeat(heartbeat_s: float) -> int:
    if not HEARTBEAT_S_MIN <= heartbeat_s <= HEARTBEAT_S_MAX:
        raise ValueError(
            f"heartbeat_s={heartbeat_s}: a node sends heartbeats every {HEARTBEAT_S_MIN}-{HEARTBEAT_S_MAX}s"
        )
    return round(heartbeat_s * 1000)


class Subscription:
    """A subscription to one node. `await Subscription.open(...)`, then `async for change, position in it`;
    `close()` (or `async with`) ends it. An error frame from the node raises `ProtocolRefused`; a closed connection
    or a node silent past three heartbeats `ProtocolConnectionError`: the subscription is then over, and a new one
    from `position` continues where it stopped."""

    def __init__(self, client: FerryProtocolClient, position: str, silence_s: float):
        self._client = client
        self._position = position
        self._silence_s = silence_s

    @classmethod
    async def open(
        cls,
        address: str,
        *,
        token: str,
        name: str,
        start: str | None = None,
        domains: Sequence[int] = (),
        heartbeat_s: float = 0.5,
        timeout_s: float = 5.0,
    ) -> Subscription:
        """Subscribes to the node at `address` (its `--listen`) with its consumer token, just after `start` (the
        position stored with the application's data; None: from what commits from now on), to `domains` (none:
        all). The node refusing raises `ProtocolRefused` with its code and message."""
        start = _canonical_start(start)
        heartbeat_ms = _check_heartbeat(heartbeat_s)
        client = await FerryProtocolClient.connect(address, timeout_s)
        try:
            await client.auth(token)
            position = await client.subscribe(name, start, heartbeat_ms, domains)
        except BaseException:
            await client.close()
            raise
        return cls(client, position, heartbeat_s * HEARTBEATS_MISSED_MAX + 1.0)

    @property
    def address(self) -> str:
        return self._client.address

    @property
    def position(self) -> str:
        """Just after the last transaction handed out (at first: where the node started the stream)."""
        return self._position

    async def next_update(self) -> tuple[Change, str] | StreamHeartbeat:
        """The next transaction with the position to store, or a heartbeat (the node had nothing to send)."""
        frame = await self._client.read_stream(self._silence_s)
        if isinstance(frame, StreamHeartbeat):
            return frame
        try:
            txn = frame.decode()
        except ProtocolError as e:
            raise ProtocolError(f"{self.address}: {e}") from e
        rows = tuple(RowChange(c["table"], c["key"], c["before"], c["after"]) for c in txn["changes"])
        change = Change(txn["gtid"], txn["domain"], txn["commit_id"], txn["commit_ts_us"], rows)
        self._position = advance(self._position, change.gtid)
        return change, self._position

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> tuple[Change, str]:
        while True:
            update = await self.next_update()
            if isinstance(update, tuple):
                return update

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.close()


class MasterSubscription:
    """A subscription that follows the master among `nodes`: an async iterator of `(Change, position)`. It asks the
    followed node its role every `role_check_s` (on a second connection) and moves on when the node is no longer the
    master or its stream ends; a round over the nodes that finds no master is tried again after `round_pause_s`.
    `node` is the node followed now; `close()` (or `async with`) ends it."""

    def __init__(
        self,
        nodes: Sequence[str],
        *,
        token: str,
        name: str,
        start: str | None = None,
        domains: Sequence[int] = (),
        heartbeat_s: float = 0.5,
        role_check_s: float = 1.0,
        round_pause_s: float = 0.1,
        timeout_s: float = 5.0,
    ):
        self.nodes = [n.strip() for n in nodes if n.strip()]
        if not self.nodes:
            raise ValueError("no node to follow")
        start = _canonical_start(start)
        _check_heartbeat(heartbeat_s)
        self._token, self._name, self._domains = token, name, tuple(domains)
        self._heartbeat_s, self._role_check_s = heartbeat_s, role_check_s
        self._round_pause_s, self._timeout_s = round_pause_s, timeout_s
        #: After the last transaction handed out; None until a subscription without a start learns where it starts.
        self.position = start
        self._current: Subscription | None = None
        self._probe: FerryProtocolClient | None = None
        self._checked = 0.0
        #: Why the last round over the nodes found no master.
        self.last_miss = ""

    @property
    def node(self) -> str | None:
        return self._current.address if self._current else None

    def __aiter__(self) -> MasterSubscription:
        return self

    async def __anext__(self) -> tuple[Change, str]:
        while True:
            if self._current is None:
                await self._look()
                continue
            try:
                update = await self._current.next_update()
            except ProtocolError as e:
                if is_final(e):
                    raise
                await self._let_go()
                continue
            if time.monotonic() - self._checked >= self._role_check_s:
                await self._check_role()
            if isinstance(update, tuple):
                self.position = update[1]
                return update

    async def _check_role(self) -> None:
        try:
            assert self._probe is not None
            still = (await self._probe.role()).is_master
        except ProtocolError:
            still = False
        if still:
            self._checked = time.monotonic()
        else:
            await self._let_go()

    async def _look(self) -> None:
        """Rounds over the nodes until one is the master and takes the subscription."""
        while True:
            misses = []
            for node in self.nodes:
                try:
                    if await self._try(node):
                        self.last_miss = ""
                        return
                    misses.append(f"{node}: not the master")
                except ProtocolError as e:
                    if is_final(e):
                        raise
                    misses.append(f"{node}: {e}")
            self.last_miss = "; ".join(misses)
            await asyncio.sleep(self._round_pause_s)

    async def _try(self, node: str) -> bool:
        probe = await FerryProtocolClient.connect(node, self._timeout_s)
        try:
            if not (await probe.role()).is_master:
                await probe.close()
                return False
            self._current = await Subscription.open(
                node,
                token=self._token,
                name=self._name,
                start=self.position,
                domains=self._domains,
                heartbeat_s=self._heartbeat_s,
                timeout_s=self._timeout_s,
            )
        except BaseException:
            await probe.close()
            raise
        self.position = self._current.position
        self._probe, self._checked = probe, time.monotonic()
        return True

    async def _let_go(self) -> None:
        current, probe, self._current, self._probe = self._current, self._probe, None, None
        if current is not None:
            await current.close()
        if probe is not None:
            await probe.close()

    async def close(self) -> None:
        await self._let_go()

    async def __aenter__(self) -> MasterSubscription:
        return self

    async def __aexit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.close()
