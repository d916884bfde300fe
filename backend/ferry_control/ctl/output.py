"""Rendering. Text (the default) is for people: rich tables, progress on stdout. `--output json` is for scripts:
exactly one JSON document on stdout per command (the API's own shapes, or the documented ones built here), progress
and messages on stderr, so `ferryctl … --output json | jq` always reads valid JSON.

Text fits the terminal (its width, or COLUMNS): no line is longer and no value is split across lines. A table too
wide for it is printed stacked — one block per row, a field per line — and a value longer than its line is cut with
"…" (the JSON output has it whole)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

#: Wide enough to measure a table's natural width (rich clamps a measure to the width it is given).
UNBOUNDED_WIDTH = 100_000


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
        cells = [[one_line(cell_text(c)) for c in row] for row in rows]
        table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for column in columns:
            table.add_column(column, no_wrap=True)
        for row in cells:
            table.add_row(*(Text(c) for c in row))
        natural = self.out.measure(table, options=self.out.options.update(max_width=UNBOUNDED_WIDTH)).maximum
        if natural <= self.out.width:
            self.out.print(table)
            return
        if title:
            self.line_cut(Text(title, style="italic"))
        key_width = max((len(c) for c in columns), default=0)
        for number, row in enumerate(cells):
            if number:
                self.out.print()
            for column, value in zip(columns, row, strict=False):
                line = Text(f"{column:<{key_width}}  ", style="bold")
                line.append(value)
                self.line_cut(line)

    def line_cut(self, text: Text) -> None:
        """One line of output, cut with "…" where it would pass the terminal's width."""
        text.truncate(self.out.width, overflow="ellipsis")
        self.out.print(text, no_wrap=True, overflow="ellipsis", crop=True)

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
            line = Text(f"{key}: ", style="bold")
            line.append(one_line(cell_text(value)))
            self.line_cut(line)


def one_line(text: str) -> str:
    """A value on one line: its line breaks become spaces."""
    return " ".join(text.splitlines()) if "\n" in text or "\r" in text else text


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
