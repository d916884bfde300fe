"""How ferryctl tells a master move's catch-up before the window: its progress while `--wait` follows it (the
step's detail: behind, rates, the predicted window against the budget, time waited against the bound), the catch-up
phase and the window's steps of a finished move, and a dry run's forecast and advice. Every line fits the terminal:
progress is cut at its width, sentences are wrapped."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from rich.markup import escape

from ferry_control.ctl.output import Output
from ferry_control.schemas.operation_results import CatchUpPhase, DomainRate

#: The step whose detail is the catch-up's progress.
STEP = "catch_up_before_window"
#: Between two progress prints of one step: its detail changes twice a second, a person reads it once.
PRINT_EVERY_S = 1.0
#: Domains shown per progress print (those lacking the most first).
DOMAINS_SHOWN = 4


def fit(out: Output, text: str) -> str:
    """`text` as one line no wider than the terminal (cut with "…"), markup escaped."""
    width = out.out.width
    if len(text) > width:
        text = text[: max(1, width - 1)] + "…"
    return escape(text)


def wrapped(out: Output, text: str, first: str, rest: str) -> None:
    """A sentence wrapped to the terminal's width, its first line after `first`, the others after `rest`."""
    for line in textwrap.wrap(text, width=max(20, out.out.width), initial_indent=first, subsequent_indent=rest):
        out.line(escape(line))


def _seconds(value: float | None) -> str:
    if value is None:
        return "unbounded"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def _rate(value: float) -> str:
    return f"{value:,.0f}/s"


class Progress:
    """Prints the catch-up's progress from its step's detail at most every `PRINT_EVERY_S` of its waiting, and the
    reason it went on once it has."""

    def __init__(self, out: Output):
        self.out = out
        self.printed_at_s: float | None = None

    def running(self, detail: Any) -> None:
        if not isinstance(detail, Mapping) or "waited_s" not in detail:
            return
        waited_s = float(detail["waited_s"])
        if self.printed_at_s is not None and waited_s - self.printed_at_s < PRINT_EVERY_S:
            return
        self.printed_at_s = waited_s
        for line in progress_lines(detail):
            self.out.line(fit(self.out, line))

    def ended(self, detail: Any) -> None:
        if isinstance(detail, Mapping) and detail.get("went_on"):
            wrapped(self.out, f"went on: {detail['went_on']}", "    ", "      ")


def progress_lines(detail: Mapping[str, Any]) -> list[str]:
    """The step's detail as lines: the waiting against its bound and the window against its budget, then the
    domains the candidate lacks something in (most behind first)."""
    behind = int(detail.get("behind") or 0)
    if not detail.get("span_s"):
        window = "measuring"
    elif detail.get("predicted_catch_up_s") is None and behind:
        window = "unbounded"
    else:
        window = "~" + _seconds(detail.get("predicted_catch_up_s"))
    lines = [
        f"    waited {float(detail['waited_s']):.1f} of {float(detail['prepare_timeout_s']):g} s: {behind:,} behind, "
        f"window {window}, budget {float(detail['max_window_s']):g} s"
    ]
    domains = sorted(
        (d for d in detail.get("domains") or () if isinstance(d, Mapping) and d.get("behind")),
        key=lambda d: -int(d["behind"]),
    )
    for d in domains[:DOMAINS_SHOWN]:
        lines.append(
            f"      domain {d['domain']}: commits {_rate(d['master_commits_per_s'])}, applies "
            f"{_rate(d['candidate_applies_per_s'])}, {int(d['behind']):,} behind"
            + ("" if d.get("keeps_up", True) else ", falls behind")
        )
    if len(domains) > DOMAINS_SHOWN:
        lines.append(f"      … and {len(domains) - DOMAINS_SHOWN} more domain(s) behind")
    return lines


def _domain_rows(rates: list[DomainRate]) -> list[list[Any]]:
    return [
        [r.domain, f"{r.master_commits_per_s:,.0f}", f"{r.candidate_applies_per_s:,.0f}", f"{r.behind:,}"]
        for r in rates
    ]


RATE_COLUMNS = ("domain", "commits/s", "applies/s", "behind")


def render_phase(out: Output, phase: CatchUpPhase, title: str, waited: str) -> None:
    """A finished move's catch-up phase (`waited`: "waited") or a dry run's forecast ("measured"): the wait, the
    predicted window against the budget, and per domain the master's commit rate against the candidate's apply
    rate."""
    took = f"{waited} {phase.waited_s:.1f} s, " if phase.waited_s is not None else ""
    window = f"window ~{_seconds(phase.predicted_catch_up_s)}" if phase.behind else "nothing left to apply"
    out.line(fit(out, f"{title}: {took}{phase.behind:,} behind, {window}; budget {phase.max_window_s:g} s"))
    if phase.rates:
        out.table(None, RATE_COLUMNS, _domain_rows(phase.rates))


def render_window(out: Output, unavailable_s: float | None, steps: Mapping[str, float]) -> None:
    """The window's steps, each with its milliseconds and share of the whole."""
    total = unavailable_s or sum(steps.values())
    out.table(
        f"window: {_seconds(total)}",
        ("step", "ms", "share"),
        ([name, f"{seconds * 1000:.1f}", f"{100 * seconds / total:.0f}%" if total else "-"]
         for name, seconds in steps.items()),
    )  # fmt: skip


def render_advice(out: Output, advice: list[str]) -> None:
    out.line("advice:")
    for sentence in advice:
        wrapped(out, sentence, "  - ", "    ")
