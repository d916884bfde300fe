"""The control plane's layers, read from its source: each rule names the file and line that breaks it.

- **SQL only in `repositories/`.** No other module builds a statement (sqlalchemy's `select`, `insert`, `update`,
  `delete`, `text`, `func`, …) or sends one: no `execute`, `scalar(s)`, `get`, `add`, `delete`, `flush`,
  `refresh`, … on a session, connection or cursor. This covers the control plane's own database on every path — the
  ORM session and the raw PostgreSQL connections of the cluster share (advisory locks) and the event relay
  (LISTEN/NOTIFY) alike. Left out, each for its reason: `models/` (declarations, no statement is run there),
  `drivers/` (they speak to the managed servers, whose SQL is their job, not to this database) and `core/db.py`
  (the settings every new connection gets, as the engine opens it).
- **Services never commit.** A request's session is committed by its dependency (`api/deps.py`, through
  `core.db.session_scope`) when the handler returns, with the request's audit row, or rolled back when it raises;
  background work (collector, operations, monitor, reconciler…) opens its own short units of work with
  `core.db.session_scope`, whose commit is the infrastructure's, not the service's. So no module of `services/` calls
  `commit()` or `rollback()` (savepoints, `begin_nested`, are a service's to choose). One thing a request's service
  may ask of its unit of work is named apart: `core.db.release_connection` — the work so far committed and the
  connection given back before the request waits on servers, so none is held meanwhile — and only the services in
  `RELEASES_CONNECTION` call it.
- **Routers call services only**: no module of `api/` imports a repository, nor do the package's other ways in —
  its top-level modules (the app, the worker, the CLI, bootstrap, registration) and `ferryctl` (`ctl/`).
- **`core/` and `schemas/` import no driver module** (`ferry_control.drivers.*`): drivers build on them, not the
  other way round; a schema that records what a driver said has its own model of it, filled by a service."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.architecture.source import PACKAGE, modules, relative, tree

#: Where SQL may be (see the module's doc).
SQL_HOMES = ("repositories/", "models/", "drivers/", "core/db.py")
#: sqlalchemy's statement builders and SQL expression helpers.
SQL_BUILDERS = {
    "select", "insert", "update", "delete", "text", "func", "exists", "union", "union_all", "literal",
    "literal_column", "case", "and_", "or_", "not_", "tuple_", "bindparam", "values", "table", "column", "true",
    "false", "null", "distinct", "lateral", "cte",
}  # fmt: skip
#: What sends SQL when called on a session, a connection or a cursor (`session`, `self._connection`, `cur`…).
STATEMENT_CALLS = {"execute", "executemany", "exec_driver_sql"}
DATABASE_HANDLE = re.compile(r"(^|_)(session|connection|conn|cursor|cur)$")
#: What sends SQL when called on a session (`session`, `self.session`, `self.guards.session`…): its queries and its
#: unit of work's writes.
SESSION_CALLS = {
    "scalar", "scalars", "stream", "stream_scalars", "get", "get_one", "add", "add_all", "delete", "merge", "flush",
    "refresh", "run_sync",
}  # fmt: skip
SESSION = re.compile(r"(^|_)session$")
#: Ending or undoing a unit of work.
TRANSACTION_ENDS = {"commit", "rollback"}
#: The request services that commit the work so far before they wait on servers (`core.db.release_connection`).
RELEASES_CONNECTION = {"services/discovery.py", "services/interleavings.py"}
DRIVERS = re.compile(r"^ferry_control\.drivers(\.|$)")
REPOSITORIES = re.compile(r"^ferry_control\.repositories(\.|$)")


def _handle(node: ast.expr) -> str | None:
    """The name an expression ends in (`self.guards.session` → `session`), or None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _imports(syntax: ast.Module) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names imported from it) for every import of the module."""
    for node in ast.walk(syntax):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def sql_outside_repositories(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each statement built or sent, in the order of the lines."""
    return sorted(_sql(path))


def _sql(path: Path) -> Iterator[tuple[int, str]]:
    syntax = tree(path)
    aliases = set()  # names the sqlalchemy module goes by (`import sqlalchemy as sa`)
    for line, module, names in _imports(syntax):
        if module == "sqlalchemy" or module.startswith(("sqlalchemy.sql", "sqlalchemy.dialects")):
            for name in names:
                if name in SQL_BUILDERS:
                    yield line, f"imports {module}.{name}"
        if module == "sqlalchemy" and not names:
            aliases.add("sqlalchemy")
    for node in ast.walk(syntax):
        if isinstance(node, ast.Import):
            aliases |= {alias.asname for alias in node.names if alias.name == "sqlalchemy" and alias.asname}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            if node.attr in SQL_BUILDERS:
                yield node.lineno, f"uses {node.value.id}.{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            handle, call = _handle(node.func.value), node.func.attr
            if handle is None:
                continue
            if (call in STATEMENT_CALLS and DATABASE_HANDLE.search(handle)) or (
                call in SESSION_CALLS and SESSION.search(handle)
            ):
                yield node.lineno, f"calls {handle}.{call}()"


def transaction_ends(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for each commit or rollback called, and each early release of the request's connection."""
    for node in ast.walk(tree(path)):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr in TRANSACTION_ENDS:
            yield node.lineno, f"calls {node.func.attr}()"
        elif _handle(node.func) == "release_connection":
            yield node.lineno, "releases its connection (core.db.release_connection)"


def imported(path: Path, pattern: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """(line, what) for each import of a module `pattern` matches."""
    for line, module, names in _imports(tree(path)):
        if pattern.match(module):
            yield line, f"imports {module}"
        elif module == "ferry_control" and any(pattern.match(f"ferry_control.{name}") for name in names):
            yield line, f"imports from ferry_control {', '.join(names)}"


def _report(found: list[str], rule: str) -> str:
    return f"{rule}:\n" + "\n".join(found)


def test_sql_only_in_repositories() -> None:
    found = [
        f"ferry_control/{relative(path)}:{line}: {what}"
        for path in modules(".")
        if not relative(path).startswith(SQL_HOMES)
        for line, what in sql_outside_repositories(path)
    ]
    assert not found, _report(found, "SQL belongs in repositories/ (a method there, called by the service)")


def test_services_never_commit() -> None:
    found = [
        f"ferry_control/{relative(path)}:{line}: {what}"
        for path in modules("services")
        for line, what in transaction_ends(path)
        if not (what.startswith("releases") and relative(path) in RELEASES_CONNECTION)
    ]
    assert not found, _report(
        found, "the unit of work's owner commits (the request's session dependency, or core.db.session_scope)"
    )


def test_the_services_releasing_their_connection_are_the_ones_named() -> None:
    releasing = {
        relative(path)
        for path in modules("services")
        if any(what.startswith("releases") for _, what in transaction_ends(path))
    }
    assert releasing == RELEASES_CONNECTION, "RELEASES_CONNECTION names every caller of core.db.release_connection"


def test_routers_call_services_only() -> None:
    ways_in = modules("api", "ctl") + sorted(PACKAGE.glob("*.py"))
    found = [
        f"ferry_control/{relative(path)}:{line}: {what}"
        for path in ways_in
        for line, what in imported(path, REPOSITORIES)
    ]
    assert not found, _report(found, "routers (and the other ways in) go through a service, never to a repository")


def test_core_and_schemas_import_no_driver() -> None:
    found = [
        f"ferry_control/{relative(path)}:{line}: {what}"
        for path in modules("core", "schemas")
        for line, what in imported(path, DRIVERS)
    ]
    assert not found, _report(found, "core/ and schemas/ sit below the drivers and import none")


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""A docstring may say select(Server)."""\n'
        "from sqlalchemy import select, update\n"
        "from sqlalchemy.ext.asyncio import AsyncSession\n"
        "import sqlalchemy as sa\n"
        "from ferry_control.repositories.servers import ServerRepository\n"
        "from ferry_control.drivers.base import Check\n"
        "async def f(session: AsyncSession, self) -> None:\n"
        "    await session.execute(sa.text('SELECT 1'))\n"
        "    await self.guards.session.flush()\n"
        "    await cursor.execute('SELECT pg_advisory_unlock(1, 2)')\n"
        "    await self.session.commit()\n"
        "    await release_connection(self.session)\n"
        "    await session.rollback()\n"
        "    {}.get('key'); await self.servers.delete(server); await session.begin_nested()\n"
        "    connection.get('master'); await cur.fetchone(); await self._session.get(Server, 1)\n"
    )
    assert [line for line, _ in sql_outside_repositories(sample)] == [2, 2, 8, 8, 9, 10, 15]
    assert [line for line, _ in transaction_ends(sample)] == [11, 12, 13]
    assert [line for line, _ in imported(sample, REPOSITORIES)] == [5]
    assert [line for line, _ in imported(sample, DRIVERS)] == [6]
