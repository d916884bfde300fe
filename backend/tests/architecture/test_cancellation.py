"""No `asyncio.wait_for` in the control plane: before Python 3.12 it returns its awaitable's result when that ends at
the moment its caller is cancelled, and the cancellation is lost — a collector cycle polling a server went on after
the app's shutdown had cancelled it, and the shutdown waited for it for good. `async with asyncio.timeout(s):` bounds
a wait without that (and `core.background.BackgroundTask.stop` cancels again should a cancellation still be lost
under a loop). Each use found is named with its file and line."""

from __future__ import annotations

import ast

from tests.architecture.source import modules, relative, tree


def _wait_for_calls(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "wait_for" and isinstance(func.value, ast.Name):
                if func.value.id == "asyncio":
                    lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "asyncio":
            lines.extend(node.lineno for alias in node.names if alias.name == "wait_for")
    return lines


def test_no_module_waits_with_asyncio_wait_for() -> None:
    found = [f"{relative(path)}:{line}" for path in modules() for line in _wait_for_calls(tree(path))]
    assert found == [], "asyncio.wait_for can lose a cancellation (use `async with asyncio.timeout(…)`): " + ", ".join(
        found
    )


def test_the_rule_finds_a_call_and_an_import() -> None:
    source = "import asyncio\nfrom asyncio import wait_for\nasync def f(x):\n    return await asyncio.wait_for(x, 1)\n"
    assert sorted(_wait_for_calls(ast.parse(source))) == [2, 4]
    assert _wait_for_calls(ast.parse("async def f(c):\n    await c.wait_for(lambda: True)\n")) == []  # a Condition's
