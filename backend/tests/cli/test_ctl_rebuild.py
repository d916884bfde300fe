"""`ferryctl rebuild --wait` tells the copy while it runs: bytes of the estimate, rate and ETA (or paused and why),
from the operation's `result.progress`, once a second at most, within the terminal's width; and the command line's
options reach the request body."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner

from ferry_control.ctl import rebuild_progress
from ferry_control.ctl.main import cli
from ferry_control.ctl.progress import StepPrinter, parse
from ferry_control.schemas.operation_results import RebuildProgress
from tests.cli.test_ctl_output import WIDTH, lines, output


def operation(progress: dict[str, Any]) -> dict[str, Any]:
    step = {"name": "copy", "state": "running", "started_at": "2026-11-29T04:00:00Z", "finished_at": None,
            "duration_s": None, "detail": None}  # fmt: skip
    return {
        "id": 7, "cluster_id": 1, "type": "rebuild", "state": "running", "dry_run": False, "steps": [step],
        "requester": "ops", "idempotency_key": None, "error": None, "created_at": "2026-11-29T04:00:00Z",
        "started_at": "2026-11-29T04:00:00Z", "finished_at": None, "params": {"registered_server_id": 3},
        "result": {"registered_server_id": 3, "progress": progress},
    }  # fmt: skip


def test_the_copy_is_told_with_bytes_rate_and_eta_or_why_it_is_paused(monkeypatch: Any) -> None:
    out, buffer = output()
    printer = StepPrinter(out)
    clock = [100.0]
    monkeypatch.setattr(rebuild_progress.time, "monotonic", lambda: clock[0])
    copying = {"phase": "copying", "bytes_done": 12_300_000, "bytes_total": 57_100_000, "rate_bytes_s": 8_000_000,
               "eta_s": 5.6, "paused": False}  # fmt: skip
    printer.update(parse(operation(copying)))
    printer.update(parse(operation({**copying, "bytes_done": 13_000_000})))  # within the second: not printed
    clock[0] += 1.5
    reason = "the donor db2 trails its source by 75 s (over the cluster's 60 s): the copy waits " + "x" * 80
    printer.update(parse(operation({**copying, "paused": True, "paused_reason": reason, "eta_s": None})))
    printed = [line for line in lines(buffer) if "copying" in line]
    assert printed[0].strip() == "copying: 12.3 MB of 57.1 MB (21%) at 8.0 MB/s, ETA 6 s", printed
    assert len(printed) == 2 and "paused: the donor db2 trails" in printed[1], printed
    assert all(len(line) <= WIDTH for line in printed), printed


def test_words_without_an_estimate() -> None:
    p = RebuildProgress(phase="preparing", bytes_done=2_000, rate_bytes_s=0.0)
    assert rebuild_progress.words(p) == "preparing: 2.0 kB at 0 B/s"


def test_the_options_reach_the_body(monkeypatch: Any) -> None:
    sent: list[tuple[str, Any]] = []

    def post(self: Any, path: str, body: Any = None, headers: Any = None) -> dict[str, Any]:
        sent.append((path, body))
        return {**operation({"phase": "preflight"}), "state": "pending", "steps": []}

    monkeypatch.setattr("ferry_control.ctl.client.Client.cluster", lambda self, ref: {"id": 1, "name": ref})
    monkeypatch.setattr(
        "ferry_control.ctl.client.Client.server", lambda self, c, ref: {"id": {"db3": 3, "db2": 2}[ref]}
    )
    monkeypatch.setattr("ferry_control.ctl.client.Client.post", post)
    result = CliRunner().invoke(
        cli, ["--url", "http://ferry.test", "--token", "t", "rebuild", "orders", "--server", "db3", "--donor", "db2",
              "--throttle", "50", "--force-master-donor"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sent == [("/clusters/1/operations/rebuild", {"registered_server_id": 3, "dry_run": False,
                     "donor_registered_server_id": 2, "force_master_donor": True, "throttle_mb_s": 50.0})]  # fmt: skip
    refused = CliRunner().invoke(cli, ["--url", "http://x", "--token", "t", "rebuild", "orders", "--server", "db3",
                                       "--throttle", "0"])  # fmt: skip
    assert refused.exit_code == 2, refused.output
