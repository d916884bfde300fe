"""One undo and one completion per move model, read from the source (services/orchestrator/moves.py says the model):

- `moves.moves()` declares each model once — its plan type, its undo (none for a hub failover) and its completion —,
  each a function of the orchestrator;
- the reconcile moves no server itself: `repairs.py` and `reconcile.py` call no driver move and no model's function
  by name — only `moves.undo` / `moves.complete` (the model's own);
- every compensation a move registers for its live run (`ctx.undo_with("undo" | "settle" | "roll_forward", …)`)
  and every function named as one (`undo…`, `settle…`, `roll_forward…`, `put_back…`, `complete…`) reaches its
  model's undo or completion: no second copy of either is written beside them;
- the servers' parts the models build on (`put_back_servers`, `complete_move`) are called by a model's undo or
  completion only."""

from __future__ import annotations

import ast
import inspect
import re
from collections import defaultdict

from ferry_control.services.orchestrator import moves
from tests.architecture.source import PACKAGE, tree

ORCHESTRATOR = PACKAGE / "services" / "orchestrator"
#: Driver calls that move a server (the reconcile leaves them to the models).
MOVING_CALLS = {
    "set_read_only", "start_replication", "stop_replication", "remove_replication", "change_master",
    "take_master_role", "repoint", "ensure_connection", "restore_connections", "promote",
}  # fmt: skip
#: Functions named as an undo or a completion.
COMPENSATION_NAME = re.compile(r"^_?(undo|settle|roll_forward|put_back|complete)")
#: What the models build on, called by their undo or completion only.
PARTS = {"put_back_servers", "complete_move"}
#: The dispatch, as called (`moves.undo(...)`).
DISPATCH = {"moves.undo", "moves.complete"}


def _model_functions() -> set[str]:
    names = set()
    for move in moves.moves():
        for step in (move.undo, move.complete):
            if step is not None:
                names.add(step.__name__)
    return names


def _called(node: ast.AST) -> set[str]:
    """The names a function calls: `f(...)` as `f`, `x.f(...)` as `f`, `moves.f(...)` as `moves.f` too; a function
    handed to `partial` counts as called."""
    names = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Name):
            names.add(func.id)
            if func.id == "partial" and call.args and isinstance(call.args[0], ast.Name):
                names.add(call.args[0].id)
        elif isinstance(func, ast.Attribute):
            names.add(func.attr)
            if isinstance(func.value, ast.Name):
                names.add(f"{func.value.id}.{func.attr}")
    return names


def _handed(expr: ast.expr) -> set[str]:
    """The functions an expression hands over: `f`, `partial(f, …)`, `a or b`."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "partial" and expr.args:
        return _handed(expr.args[0])
    if isinstance(expr, ast.BoolOp):
        return set().union(*(_handed(v) for v in expr.values))
    return set()


def _functions() -> dict[str, list[tuple[str, ast.AST]]]:
    """Every function of the orchestrator (nested ones too) by name: (module, node)."""
    found: dict[str, list[tuple[str, ast.AST]]] = defaultdict(list)
    for path in sorted(ORCHESTRATOR.glob("*.py")):
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found[node.name].append((path.name, node))
    return found


def _reaches(name: str, targets: set[str], graph: dict[str, set[str]]) -> bool:
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in targets:
            return True
        if current in seen:
            continue
        seen.add(current)
        todo.extend(graph.get(current, ()))
    return False


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for name, defs in _functions().items():
        for _, node in defs:
            graph[name] |= _called(node)
    return graph


def test_each_model_is_declared_once_with_its_undo_and_completion() -> None:
    declared = moves.moves()
    assert len({m.plan for m in declared}) == len(declared)
    assert len({m.name for m in declared}) == len(declared)
    functions = _functions()
    for move in declared:
        for step in (move.undo, move.complete):
            if step is None:
                continue
            assert inspect.iscoroutinefunction(step), step
            assert step.__module__.startswith("ferry_control.services.orchestrator."), step
            assert len(functions[step.__name__]) == 1, f"{step.__name__} is defined more than once"
    assert len(_model_functions()) == sum(1 + (m.undo is not None) for m in declared)


def test_the_reconcile_moves_servers_through_the_models_only() -> None:
    models = _model_functions()
    for name in ("repairs.py", "reconcile.py"):
        called = _called(tree(ORCHESTRATOR / name))
        assert not called & MOVING_CALLS, f"{name} moves servers itself: {sorted(called & MOVING_CALLS)}"
        assert not called & (models | PARTS), f"{name} calls a model's step by name: {sorted(called & models)}"
    assert DISPATCH <= _called(tree(ORCHESTRATOR / "repairs.py"))


def test_every_live_compensation_is_its_models_undo_or_completion() -> None:
    graph = _graph()
    targets = _model_functions() | DISPATCH
    registered: list[tuple[str, str]] = []
    for path in sorted(ORCHESTRATOR.glob("*.py")):
        for call in ast.walk(tree(path)):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                continue
            if call.func.attr != "undo_with" or len(call.args) < 2:
                continue
            name = call.args[0]
            if not (isinstance(name, ast.Constant) and name.value in ("undo", "settle", "roll_forward")):
                continue
            for function in _handed(call.args[1]):
                if function in graph:
                    registered.append((f"{path.name}: {name.value}", function))
    where = {r.split(":")[0] for r, _ in registered}
    assert {"switchover.py", "hub_switchover.py", "failover.py", "hub_failover.py"} <= where, where
    stray = [f"{r} → {f}" for r, f in registered if not _reaches(f, targets, graph)]
    # The one-server operations' own undos (skip.py, parallel_apply.py) are not moves.
    stray = [s for s in stray if not s.startswith(("skip.py", "parallel_apply.py"))]
    assert not stray, f"a compensation that reaches no model's undo or completion: {stray}"
    named = [
        f"{module}: {name}"
        for name, defs in _functions().items()
        for module, _ in defs
        if COMPENSATION_NAME.match(name)
        and name not in PARTS
        and module not in ("runner.py", "moves.py", "skip.py", "parallel_apply.py", "catch_up_parallel.py")
        and not _reaches(name, targets, graph)
    ]
    assert not named, f"named as an undo or a completion, but reaches no model's: {named}"


def test_the_parts_are_called_by_a_models_step_only() -> None:
    models = _model_functions()
    callers = [
        f"{module}: {name}"
        for name, defs in _functions().items()
        for module, node in defs
        if _called(node) & PARTS and name not in models
    ]
    assert not callers, f"{sorted(PARTS)} called outside a model's undo or completion: {callers}"
