#!/usr/bin/env python3
"""Runs the engine's Rust test binaries several at a time: what `cargo test` runs, in the same working directory
and environment, but with up to --jobs binaries at once instead of one after the other.

Most of the engine's test time is spent waiting on real ferryd nodes (timeouts, replication catching up, fsyncs):
run one binary at a time, the two cores sit three quarters idle (`cargo test --workspace`: 140 s of wall time for
70 s of CPU). The selection is cargo's own: `cargo test --no-run --message-format=json` with the arguments given
after `--` builds the test binaries and names them, and each is run from its package's directory as `cargo test`
does. The selection's doc tests, when asked for (--doc), run as one more job through `cargo test --doc`.

cargo-nextest does this job too, but here it could only be had by compiling it and its dependencies from crates.io
on every fresh machine, which costs more than it saves.

Each binary's output is kept and printed when it fails; a line per binary says how it went. The exit status is 1 when
any binary failed, did not build, or when the selection held no test binary at all. An interrupt stops every binary
still running (each runs in its own process group, with the ferryd nodes it started).

    scripts/engine-tests.py [--jobs N] [--test-threads N] [--doc] -- <cargo test selection, e.g. --workspace>
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "engine"
RESULT = re.compile(r"test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored")


@dataclass(frozen=True)
class Job:
    """One thing to run: a test binary (or `cargo test --doc`) with where and under what name."""

    label: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    long: bool  # many tests (a crate's unit tests, a test directory's binary, the doc tests): started first


@dataclass(frozen=True)
class Outcome:
    job: Job
    returncode: int
    output: str
    seconds: float

    def summary(self) -> str:
        counts = [m.groups() for m in RESULT.finditer(self.output)]
        passed = sum(int(c[1]) for c in counts)
        failed = sum(int(c[2]) for c in counts)
        ignored = sum(int(c[3]) for c in counts)
        state = "ok    " if self.returncode == 0 else "FAILED"
        extra = f", {failed} failed" if failed else ""
        extra += f", {ignored} ignored" if ignored else ""
        return f"{state} {self.job.label}: {passed} passed{extra} in {self.seconds:.1f} s"


#: The pids (and process groups) of the binaries running now, for an interrupt to stop.
RUNNING: set[int] = set()


def built_tests(selection: list[str], test_threads: int) -> list[Job]:
    """Builds the selection's test binaries with cargo and returns one job per binary; an integration test binary
    runs `test_threads` of its tests at once."""
    command = ["cargo", "test", "--locked", "--no-run", "--message-format=json-render-diagnostics", *selection]
    build = subprocess.run(command, cwd=ENGINE, stdout=subprocess.PIPE, text=True)
    if build.returncode != 0:
        sys.exit(f"engine-tests: the test build failed: {' '.join(command)} (exit {build.returncode})")
    target = Path(os.environ.get("CARGO_TARGET_DIR", ENGINE / "target")).resolve()
    jobs = []
    for line in build.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue  # a binary built for the integration tests to start, not a test itself
        manifest = Path(message["manifest_path"])
        package = manifest.parent.name
        kind = message["target"]["kind"][0]
        unit = kind in ("lib", "bin", "proc-macro", "cdylib")
        source = Path(message["target"]["src_path"]).relative_to(manifest.parent)
        name = f"{package} unit tests ({kind})" if unit else f"{package} {source}"
        env = dict(os.environ, CARGO_MANIFEST_DIR=str(manifest.parent), CARGO_PKG_NAME=package)
        deps = str(target / "debug" / "deps")
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (deps, os.environ.get("LD_LIBRARY_PATH")) if p)
        argv = [message["executable"]]
        if not unit:
            # Integration tests wait on the processes they start: more of them at once than there are cores.
            argv.append(f"--test-threads={test_threads}")
        # A binary of a test directory (tests/<name>/main.rs) holds many modules: started first, with the unit tests.
        jobs.append(Job(name, argv, manifest.parent, env, unit or source.name == "main.rs"))
    return jobs


def doc_tests(selection: list[str]) -> Job:
    """The selection's doc tests (its features too, so the libraries built for the binaries serve them): cargo
    compiles and runs them itself."""
    return Job("doc tests", ["cargo", "test", "--locked", "--doc", *selection], ENGINE, dict(os.environ), long=True)


def run(job: Job) -> Outcome:
    started = time.monotonic()
    process = subprocess.Popen(
        job.argv,
        cwd=job.cwd,
        env=job.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    RUNNING.add(process.pid)
    try:
        output, _ = process.communicate()
    finally:
        RUNNING.discard(process.pid)
    return Outcome(job, process.returncode, output, time.monotonic() - started)


def stop_running(signum: int, _frame: object) -> None:
    for pid in list(RUNNING):
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    sys.exit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("FERRY_ENGINE_TEST_JOBS", "4")))
    parser.add_argument("--doc", action="store_true", help="run the workspace's doc tests too")
    parser.add_argument(
        "--test-threads",
        type=int,
        default=int(os.environ.get("FERRY_ENGINE_TEST_THREADS", "6")),
        help="tests at once within one integration test binary",
    )
    parser.add_argument("selection", nargs="*", help="cargo test's selection (after --)")
    args = parser.parse_args()
    if args.jobs < 1 or args.test_threads < 1:
        parser.error("--jobs and --test-threads must be at least 1")
    signal.signal(signal.SIGINT, stop_running)
    signal.signal(signal.SIGTERM, stop_running)

    started = time.monotonic()
    jobs = built_tests(args.selection, args.test_threads)
    if args.doc:
        jobs.append(doc_tests(args.selection))
    if not jobs:
        print(f"engine-tests: no test binary in the selection {args.selection}", file=sys.stderr)
        return 1
    jobs.sort(key=lambda j: not j.long)  # stable: cargo's order otherwise
    failed = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in as_completed([pool.submit(run, job) for job in jobs]):
            outcome = future.result()
            print(outcome.summary(), flush=True)
            if outcome.returncode != 0:
                failed.append(outcome)
    for outcome in failed:
        print(f"\n---- {outcome.job.label} (exit {outcome.returncode}) ----\n{outcome.output}", flush=True)
    total = time.monotonic() - started
    print(f"engine-tests: {len(jobs) - len(failed)} of {len(jobs)} passed in {total:.0f} s ({args.jobs} at a time)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
