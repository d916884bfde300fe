"""The boundary between the control plane's services and its drivers: services name no server kind — no driver
module imported, no branch on a kind, no MariaDB or ferryd word in their logic (comments and docstrings may explain
with them) — and every kind of driver error has its HTTP status in the one table that maps them."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from ferry_control.api.errors import DRIVER_ERROR_STATUS
from ferry_control.drivers.errors import ErrorKind
from tests.architecture.source import PACKAGE, tree

SERVICES = PACKAGE / "services"
#: Modules of one driver (the generic ones — base, errors, factory, registry, credentials — are for everyone).
DRIVER_MODULES = re.compile(r"^ferry_control\.drivers\.(ferry|mariadb)")
#: A server kind's name in code or in a message.
KIND_WORDS = re.compile(r"mariadb|ferryd", re.IGNORECASE)
KIND_MEMBERS = {"ferry", "mariadb"}


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings (of the module, a class or a function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def driver_names(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for each place the module names a driver or a server kind."""
    syntax = tree(path)
    docstrings = _docstrings(syntax)
    for node in ast.walk(syntax):
        if isinstance(node, ast.ImportFrom) and node.module and DRIVER_MODULES.match(node.module):
            yield node.lineno, f"imports {node.module}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if DRIVER_MODULES.match(alias.name):
                    yield node.lineno, f"imports {alias.name}"
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "ServerKind" and node.attr in KIND_MEMBERS:
                yield node.lineno, f"branches on ServerKind.{node.attr}"
            elif KIND_WORDS.search(node.attr):
                yield node.lineno, f"names {node.attr}"
        elif isinstance(node, ast.Name) and KIND_WORDS.search(node.id):
            yield node.lineno, f"names {node.id}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if KIND_WORDS.search(node.value) or node.value in KIND_MEMBERS:
                yield node.lineno, f"says {node.value!r}"


def test_services_name_no_driver_and_no_server_kind() -> None:
    found = [
        f"{path.relative_to(SERVICES.parents[1])}:{line}: {what}"
        for path in sorted(SERVICES.rglob("*.py"))
        for line, what in driver_names(path)
    ]
    assert not found, "services must leave server kinds to the drivers:\n" + "\n".join(found)


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""A docstring may say MariaDB."""\n'
        "from ferry_control.drivers.mariadb import MariadbDriver  # noqa\n"
        "import ferry_control.drivers.ferry\n"
        "# a comment may say ferryd\n"
        "if kind == ServerKind.ferry:\n"
        '    raise ValueError(f"ferryd needs {n} characters")\n'
    )
    assert [line for line, _ in driver_names(sample)] == [2, 3, 5, 6]


def test_every_kind_of_driver_error_has_its_http_status() -> None:
    assert set(DRIVER_ERROR_STATUS) == set(ErrorKind)
    assert all(500 <= status < 600 for status in DRIVER_ERROR_STATUS.values()), "a server's failure, not the caller's"
