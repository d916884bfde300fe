"""The little of the database a failover reads and writes, in memory: `session.get` of the cluster's row and of its
servers' rows (the simulated ones `context.registered` built: fencing the old master marks its row, suspending
automatic failover marks the cluster's) and the cluster's replication links as the collector last stored them (none
for a failover of a root; a hub failover reads the lost hub's own connections there). Anything else the code under
test asks raises, as a database that is away would (routing.py's background recordings log it and go on)."""

from __future__ import annotations

from types import SimpleNamespace, TracebackType
from typing import Any


class _Session:
    def __init__(self, rows: dict[str, dict[int, SimpleNamespace]], links: list[SimpleNamespace]) -> None:
        self._rows = rows
        self._links = links
        self.info: dict[str, Any] = {}

    async def get(self, model: type, key: int) -> SimpleNamespace | None:
        return self._rows.get(model.__name__, {}).get(key)

    async def scalars(self, statement: Any) -> Any:
        tables = {t.name for t in statement.columns_clause_froms}
        if tables != {"replication_links"}:
            raise RuntimeError(f"the simulation has no table {', '.join(sorted(tables))}")
        return SimpleNamespace(all=lambda: list(self._links))

    async def commit(self) -> None:
        """Every change is in the rows already."""

    async def rollback(self) -> None:
        """Nothing is undone (no change the simulation keeps fails midway)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the simulation's database has no {name}")

    async def __aenter__(self) -> _Session:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        return None


class SimDatabase:
    """A sessionmaker over the cluster's row and its servers' rows."""

    def __init__(
        self, cluster: SimpleNamespace, servers: list[SimpleNamespace], links: list[SimpleNamespace] | None = None
    ) -> None:
        self.rows = {"Cluster": {cluster.id: cluster}, "Server": {s.id: s for s in servers}}
        self.links = links or []

    def __call__(self) -> _Session:
        return _Session(self.rows, self.links)
