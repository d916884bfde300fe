"""What the architecture tests read: the control plane's package, its modules and each module's syntax tree, parsed
once per test process (several rules walk the same files; a tree is only read, never changed)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ferry_control"


def relative(path: Path) -> str:
    """`path` as the package names it (`services/collector.py`)."""
    return path.relative_to(PACKAGE).as_posix()


def modules(*under: str) -> list[Path]:
    """The modules under those folders of the package (all of it when none is named), sorted."""
    return sorted(p for folder in under or (".",) for p in (PACKAGE / folder).rglob("*.py"))


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))
