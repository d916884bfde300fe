"""The little of the database the operations read and write, in memory: `session.get` of the cluster's row and of its
servers' rows (the simulated ones `context.registered` built: fencing the old master marks its row, suspending
automatic failover marks the cluster's), the cluster's replication links as the collector last stored them (none
for a failover of a root; a hub failover reads the lost hub's own connections there), the operation's row, the
replica guard's rows (where an operation records a promoted multi-source server's writable domains: `session.get`,
`add`), and the cluster's operation lock — its holder, lease and fencing token — which the real repository's statements
(`ClusterRepository.lock_state`, `lock_for_operation`, `renew_lease`, `release`; `OperationRepository.get_any`) read
and change here as PostgreSQL would: an UPDATE's WHERE decides whether it changes the row, and its row count says so.
Anything else the code under test asks raises, as a database that is away would (routing.py's background recordings
log it and go on).

A session belongs to an API instance (`SimDatabase.bound`): a crashed instance's statements wait as its calls do
(faults.py), and go on if it wakes. Who holds the lock over time (`LockStore.history`, each token's instance in
`owners`) is what the fencing invariant (wake.py) reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from types import SimpleNamespace, TracebackType
from typing import Any

from tests.simulation.clock import now, virtual_now
from tests.simulation.faults import Instance


@dataclass
class LockStore:
    """The cluster's operation lock row and the operations' rows, shared by every instance's sessions."""

    lock: SimpleNamespace
    operations: dict[int, SimpleNamespace] = field(default_factory=dict)
    #: (virtual time, fencing token, holder's operation id or None) at each change of holder or token.
    history: list[tuple[float, int, int | None]] = field(default_factory=list)
    #: The instance that took the lock with each token.
    owners: dict[int, str] = field(default_factory=dict)

    @classmethod
    def held_by(cls, cluster_id: int, operation_id: int, instance: str, lease_s: float) -> LockStore:
        """The lock as the operation's instance took it (token 1), with its lease, and the operation running."""
        lock = SimpleNamespace(
            cluster_id=cluster_id, operation_id=operation_id, fencing_token=1, acquired_at=virtual_now(),
            lease_expires_at=virtual_now() + timedelta(seconds=lease_s),
        )  # fmt: skip
        store = cls(
            lock,
            {operation_id: SimpleNamespace(id=operation_id, state="running", error=None, cancel_requested_by=None)},
        )
        store.history.append((now(), 1, operation_id))
        store.owners[1] = instance
        return store

    def noted(self, instance: str) -> None:
        """Records a change of holder or token (by `instance` when the token is new)."""
        state = (self.lock.fencing_token, self.lock.operation_id)
        if self.history and self.history[-1][1:] == state:
            return
        self.owners.setdefault(self.lock.fencing_token, instance)
        self.history.append((now(), *state))

    def holder_at(self, t: float) -> str | None:
        """The instance holding the lock at `t` (None: free)."""
        holder = None
        for at, token, operation_id in self.history:
            if at > t:
                break
            holder = None if operation_id is None else self.owners.get(token)
        return holder


def _criteria(statement: Any) -> dict[str, Any]:
    found = {}
    for clause in statement._where_criteria:
        if clause.operator.__name__ != "eq":
            raise RuntimeError(f"the simulation's database cannot evaluate {clause}")
        found[clause.left.key] = clause.right.value
    return found


def _table(statement: Any) -> str:
    table = getattr(statement, "table", None)
    if table is not None:
        return str(table.name)
    return ", ".join(sorted(t.name for t in statement.columns_clause_froms))


class _Session:
    def __init__(self, database: SimDatabase) -> None:
        self._db = database
        self.info: dict[str, Any] = {}

    async def _pause(self) -> None:
        instance = self._db.instance
        if instance is not None and instance.crashed.is_set():
            await instance.frozen()

    async def get(self, model: type, key: int) -> SimpleNamespace | None:
        await self._pause()
        return self._db.rows.get(model.__name__, {}).get(key)

    async def scalars(self, statement: Any) -> Any:
        await self._pause()
        if _table(statement) != "replication_links":
            raise RuntimeError(f"the simulation has no table {_table(statement)}")
        return SimpleNamespace(all=lambda: list(self._db.links))

    async def scalar(self, statement: Any) -> Any:
        await self._pause()
        store, table, where = self._db.store, _table(statement), _criteria(statement)
        if store is not None and table == "operation_locks":
            return store.lock if where == {"cluster_id": store.lock.cluster_id} else None
        if store is not None and table == "operations" and set(where) == {"id"}:
            return store.operations.get(where["id"])
        raise RuntimeError(f"the simulation has no table {table}")

    def add(self, row: Any) -> None:
        """A new row of the one table the simulation adds to: the replica guard's (by server id), where an operation
        records a promoted multi-source server's writable domains."""
        if type(row).__name__ != "ReplicaGuard":
            raise RuntimeError(f"the simulation has no table for {type(row).__name__}")
        self._db.rows.setdefault("ReplicaGuard", {})[row.server_id] = row

    async def flush(self) -> None:
        await self._pause()

    async def execute(self, statement: Any) -> Any:
        await self._pause()
        store, table = self._db.store, _table(statement)
        if store is None or table != "operation_locks" or not hasattr(statement, "_values"):
            raise RuntimeError(f"the simulation cannot run that on {table}")
        lock = store.lock
        matched = all(getattr(lock, column) == value for column, value in _criteria(statement).items())
        if matched:
            for column, value in statement._values.items():
                setattr(lock, column if isinstance(column, str) else column.key, value.value)
            store.noted(self._db.instance_name)
        return SimpleNamespace(rowcount=int(matched))

    def get_bind(self) -> Any:
        return SimpleNamespace(dialect=SimpleNamespace(name="postgresql"))

    async def commit(self) -> None:
        """Every change is in the rows already; a lock taken by changing its row (a reconcile, `_claim`) is noted."""
        await self._pause()
        if self._db.store is not None:
            self._db.store.noted(self._db.instance_name)

    async def rollback(self) -> None:
        """Nothing is undone (no change the simulation keeps fails midway)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the simulation's database has no {name}")

    async def __aenter__(self) -> _Session:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        return None


class SimDatabase:
    """A sessionmaker over the cluster's row and its servers' rows, the links, and (with a `store`) the operation
    lock and operations, for one instance."""

    def __init__(
        self, cluster: SimpleNamespace, servers: list[SimpleNamespace], links: list[SimpleNamespace] | None = None,
        *, store: LockStore | None = None, instance: Instance | None = None,
    ) -> None:  # fmt: skip
        self.rows = {"Cluster": {cluster.id: cluster}, "Server": {s.id: s for s in servers}}
        self.links = links or []
        self.store = store
        self.instance = instance

    @property
    def instance_name(self) -> str:
        return "?" if self.instance is None else self.instance.name

    def bound(self, instance: Instance) -> SimDatabase:
        """The same database as another instance's sessions see it."""
        other = SimDatabase.__new__(SimDatabase)
        other.rows, other.links, other.store, other.instance = self.rows, self.links, self.store, instance
        return other

    def __call__(self) -> _Session:
        return _Session(self)
