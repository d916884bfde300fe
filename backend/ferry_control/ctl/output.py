"""Rendering. Text (the default) is for people: rich tables, progress on stdout. `--output json` is for scripts:
exactly one JSON document on stdout per command (the API's own shapes, or the documented ones built here), progress
and messages on stderr, so `ferryctl … --output json | jq` always reads valid JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text


class Output:
    def __init__(self, fmt: str):
        self.json = fmt == "json"
        self.out = Console(highlight=False, soft_wrap=False)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        #: A command prints one document: an error after it (a failed operation's exit code) adds none.
        self.documented = False

    def document(self, doc: Any, render: Callable[[Any], None]) -> None:
        """The command's result: as JSON, or rendered for people."""
        if self.json:
            if not self.documented:
                print(json.dumps(doc, indent=2, default=str))
        else:
            render(doc)
        self.documented = True

    def line(self, text: str) -> None:
        """Progress and notes: stdout for people, stderr beside a JSON document."""
        (self.err if self.json else self.out).print(text)

    def error(self, message: str) -> None:
        self.err.print(f"[bold red]error:[/] {escape(message)}")

    def table(self, title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell_text(c)) for c in row))
        self.out.print(table)

    def records(
        self, title: str | None, columns: Sequence[str], rows: Iterable[dict[str, Any]], empty: str | None = None
    ) -> None:
        """A table of API objects, one column per named field; `empty` (else "none") in its place when there are
        none, never an empty table."""
        rows = list(rows)
        if not rows:
            self.line(empty or (f"{title}: none" if title else "none"))
            return
        self.table(title, columns, ([row.get(c) for c in columns] for row in rows))

    def fields(self, pairs: Iterable[tuple[str, Any]]) -> None:
        for key, value in pairs:
            self.out.print(f"[bold]{escape(key)}[/]: {escape(cell_text(value))}")


def cell_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if value else "0"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value) or "-"
    if isinstance(value, dict):
        return " · ".join(f"{k}: {cell_text(v)}" for k, v in value.items()) or "-"
    return str(value)
