"""`ferryctl switchover` on a cluster whose candidate trails (a real ferryd cluster; the candidate is a delayed
replica, so it applies nothing while it lacks five transactions): `--max-window` and `--prepare-timeout` reach the
operation; with `--wait` the catch-up's progress (behind, rates, the predicted window against the budget, the time
waited against the bound) is printed while it waits, in 80 columns, and once the candidate may catch up the move goes
on and prints its catch-up phase and its window's steps; a catch-up that never fits is refused (exit 3, nothing
changed, both rates in the message); a dry run prints its forecast and advice; bad values are usage errors."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path

from ferry_control.ctl.errors import ExitCode
from tests.cli.test_ferryctl import FERRYCTL, ferryctl
from tests.conftest import LiveFactory
from tests.ferryd_cluster import FerrydCluster, FerrydNode
from tests.helpers import WAIT_S, register, serve, topology, writable_master
from tests.waiting import eventually

COLUMNS = 80


def delay(replica: FerrydNode, master: FerrydNode, seconds: int) -> None:
    replica.post("/v1/replication/main/stop", {})
    replica.post("/v1/replication/main/change-master", {"master": master.listen, "delay_s": seconds})
    replica.post("/v1/replication/main/start", {})


def joined(text: str) -> str:
    """Wrapped sentences as one line."""
    return re.sub(r"\s+", " ", text)


class Following:
    """ferryctl in its own process, its standard output read line by line as it prints."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process
        self.lines: list[str] = []
        self.reading = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, tmp_path: Path, *args: str, url: str, token: str) -> Following:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FERRY")}
        env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), COLUMNS=str(COLUMNS), FERRY_URL=url, FERRY_TOKEN=token)
        process = await asyncio.create_subprocess_exec(
            str(FERRYCTL), *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.lines.append(line.decode().rstrip("\n"))

    async def end(self) -> tuple[int, str]:
        """Its exit code and standard error, once it has ended."""
        assert self.process.stderr is not None
        async with asyncio.timeout(WAIT_S):
            err = await self.process.stderr.read()
            await self.reading
            code = await self.process.wait()
        return code, err.decode()

    def stop(self) -> None:
        if self.process.returncode is None:
            self.process.kill()


async def test_switchover_wait_prints_the_catch_up_while_it_waits_then_goes_on(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, _ = await register(live.client, ferryd, name="orders")
        delay(ferryd.replica1, ferryd.master, 3600)
        ferryd.write(5, domains=(1,))
        async with serve(live.app) as url:
            following = await Following.start(
                tmp_path, "switchover", "orders", "--to", "replica1", "--max-window", "2", "--prepare-timeout", "600",
                "--wait", url=url, token=live.tokens.operator,
            )  # fmt: skip
            try:
                # The candidate applies nothing: the switchover waits in its catch-up, and says so as it waits.
                def progress() -> list[str]:
                    return [line for line in following.lines if line.startswith("    waited ")]

                await eventually("ferryctl printing the catch-up's progress", progress)
                waiting = progress()[0]
                assert re.fullmatch(
                    r"    waited \d+\.\d of 600 s: 5 behind, window unbounded, budget 2 s",
                    waiting,
                ), waiting
                await eventually(
                    "the rates of domain 1",
                    lambda: "      domain 1: commits 0/s, applies 0/s, 5 behind" in following.lines,
                )
                assert writable_master(ferryd.nodes) is ferryd.master, "nothing changes while it waits"
                operations = (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json()
                assert operations[0]["params"]["max_window_s"] == 2, operations[0]["params"]
                assert operations[0]["params"]["prepare_timeout_s"] == 600, operations[0]["params"]

                # Its delay removed, the candidate catches up: the move goes on.
                await asyncio.to_thread(delay, ferryd.replica1, ferryd.master, 0)
                code, err = await following.end()
            finally:
                following.stop()
    out = "\n".join(following.lines)
    assert code == ExitCode.ok, (out, err)
    assert writable_master(ferryd.nodes) is ferryd.replica1
    assert "✓ catch_up_before_window" in out and "    went on: the candidate lacks nothing" in out, out
    phase = r"^catch-up: waited \d+\.\d s, 0 behind, nothing left to apply; budget 2 s$"
    assert re.search(phase, out, re.M), out
    # The window's steps, each with its share.
    assert re.search(r"^window: \d+ ms *$", out, re.M), out
    for name in ("old_master_read_only", "wait_in_flight_commits", "candidate_catch_up", "promote_candidate"):
        assert re.search(rf"^{name} +│ \d+\.\d +│ \d+% *$", out, re.M), (name, out)
    assert all(len(line) <= COLUMNS for line in following.lines), [x for x in following.lines if len(x) > COLUMNS]


async def test_a_catch_up_that_never_fits_is_refused_and_a_dry_run_forecasts_and_advises(
    live_app: LiveFactory, ferryd_factory: Callable[..., FerrydCluster], tmp_path: Path
) -> None:
    ferryd = ferryd_factory()
    ferryd.write(2, domains=(1,))
    ferryd.converge()
    async with live_app() as live:
        cluster_id, _ = await register(live.client, ferryd, name="orders")
        delay(ferryd.replica1, ferryd.master, 3600)
        ferryd.write(5, domains=(1,))
        before = topology(ferryd.nodes)
        async with serve(live.app) as url:
            token = live.tokens.operator
            for flag, bad, words in (("--max-window", "0", "0<x<=3600"), ("--prepare-timeout", "3601", "0<x<=3600"),
                                     ("--max-window", "soon", "not a valid float")):  # fmt: skip
                run = await ferryctl(tmp_path, "switchover", "orders", flag, bad, url=url, token=token)
                assert run.code == ExitCode.usage and words in run.err, (flag, bad, run.err)
            assert (await live.client.get(f"/api/v1/clusters/{cluster_id}/operations")).json() == []

            # The window never fits: refused once the bound has passed, nothing changed, in numbers.
            run = await ferryctl(
                tmp_path, "switchover", "orders", "--to", "replica1", "--max-window", "2", "--prepare-timeout", "1",
                "--wait", url=url, token=token, columns=COLUMNS,
            )  # fmt: skip
            assert run.code == ExitCode.refused, (run.out, run.err)
            error = joined(run.err)
            assert re.search(r"switchover \d+ refused: nothing was changed: replica1 \(server_id 2\) applies 0 txn/s",
                             error), error  # fmt: skip
            assert "5 transactions behind" in error and "over the 2 s budget" in error, error
            assert "✗ catch_up_before_window" in run.out, run.out
            assert topology(ferryd.nodes) == before
            as_json = await ferryctl(
                tmp_path, "switchover", "orders", "--to", "replica1", "--max-window", "2", "--prepare-timeout", "1",
                "--wait", "-o", "json", url=url, token=token,
            )  # fmt: skip
            assert as_json.code == ExitCode.refused, (as_json.out, as_json.err)
            assert as_json.json()["state"] == "failed" and "over the 2 s budget" in as_json.json()["error"]

            # A dry run: the checklist, then what it measured and what it advises.
            dry = await ferryctl(
                tmp_path, "switchover", "orders", "--to", "replica1", "--max-window", "2", "--dry-run", "--wait",
                url=url, token=token, columns=COLUMNS,
            )  # fmt: skip
            assert dry.code == ExitCode.ok, (dry.out, dry.err)
            assert re.search(
                r"^forecast: measured \d+\.\d s, 5 behind, window ~unbounded; budget 2 s$", dry.out, re.M
            ), dry.out
            # Domain 1: the master commits nothing, the candidate applies nothing, five transactions behind.
            assert re.search(r"^1 +│ 0 +│ 0 +│ 5 *$", dry.out, re.M), dry.out
            assert "advice:" in dry.out and "  - a switchover now would first wait" in dry.out, dry.out
            assert "over the 2 s budget" in joined(dry.out), dry.out
            assert all(len(line) <= COLUMNS for line in dry.out.splitlines()), dry.out
            assert topology(ferryd.nodes) == before
