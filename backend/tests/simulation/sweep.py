"""How a seeded sweep of schedules is judged, the same for the switchover's and the failover's: a schedule breaking an
invariant that no known issue (known.py) explains fails the sweep, naming its seed and how to replay it; so does an
operation ending in an internal error (a finding): a sweep whose operations crash checks nothing. Known issues are
listed with the seeds that show them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.simulation.known import known
from tests.simulation.schedule import Report


@dataclass
class Verdict:
    #: Schedules that broke an invariant no known issue explains.
    failures: list[Report] = field(default_factory=list)
    #: Each known issue's name → the seeds that showed it.
    known_seen: dict[str, list[int]] = field(default_factory=dict)
    #: Each finding (an operation's internal error) → the seeds that showed it.
    findings: dict[str, list[int]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The known issues and findings, one line each, for the sweep's printout."""
        shown = [
            f"known issue {name}: {len(seeds)} schedules, seeds {seeds[:10]}" for name, seeds in self.known_seen.items()
        ]
        shown += [f"finding: {finding}: seeds {seeds[:10]}" for finding, seeds in self.findings.items()]
        return shown

    def failure(self, replay: str) -> str | None:
        """Why the sweep fails (None: it passes); `replay` is a command with `{seed}` in it."""
        if self.failures:
            first = self.failures[0]
            return (
                f"{len(self.failures)} schedule(s) broke an invariant; the first, replayed by "
                f"`{replay.format(seed=first.seed)}`:\n{first.summary()}\n"
                f"(also seeds {[r.seed for r in self.failures[1:20]]})"
            )
        if self.findings:
            finding, seeds = next(iter(self.findings.items()))
            return (
                f"{sum(len(s) for s in self.findings.values())} operation(s) ended in an internal error; the first "
                f"({finding}), replayed by `{replay.format(seed=seeds[0])}`"
            )
        return None


def judge(reports: Sequence[Report], failed: Sequence[Report]) -> Verdict:
    """The sweep's verdict from every schedule's report and those that broke an invariant."""
    verdict = Verdict()
    for report in failed:
        if any(known(report, v) is None for v in report.violations):
            verdict.failures.append(report)
        for v in report.violations:
            issue = known(report, v)
            if issue is not None and report.seed not in verdict.known_seen.setdefault(issue.name, []):
                verdict.known_seen[issue.name].append(report.seed)
    for report in reports:
        for finding in report.findings:
            verdict.findings.setdefault(finding, []).append(report.seed)
    return verdict
