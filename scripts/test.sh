#!/usr/bin/env bash
# `make test`: every suite, ordered so the two cores are busy from start to end, and the time each stage took.
#
#   in the background from the start   the Debian packages (ensure-packages.sh), the npm packages of the dashboard
#                                      and of the end-to-end suite, the backend's Python packages
#   engine build                       rustfmt's check, then every target of the workspace once but the Python
#                                      module's crate, which maturin builds next (the tests, the
#                                      fail-stop tests among them, ferryd and ferry-bench share one feature set —
#                                      the Makefile's ENGINE_TEST_FEATURES — so nothing is built twice), clippy's
#                                      lints applied as they compile (below), while the backend's packages install
#   Python module                      built into the virtualenv once those packages are in it
#   together                           the backend's pytest suite against PostgreSQL, ferryd, MariaDB and HAProxy;
#                                      beside it the engine's tests (scripts/engine-tests.py: several binaries at
#                                      once; they mostly wait on ferryd nodes) and the Python module's tests, and
#                                      the backend's lints (ruff, mypy: `make lint-backend`) then the dashboard's
#                                      typecheck, OpenAPI check, production build and unit tests (Vitest). The
#                                      backend's suite is the longest by far: its lints (mypy type-checks from
#                                      scratch on a clean clone) run in a shorter line.
#   end-to-end                         Playwright in Chromium over the whole stack, once the engine's tests, the
#                                      lints and Vitest have ended: beside the rest of the backend's suite, whose
#                                      tests wait on their servers (alone it leaves a fifth of the cores' time idle)
#                                      as much as the end-to-end specs wait on the stack (a third idle alone). One
#                                      after the other they ended a clean clone's run at 1247 s; side by side, at
#                                      1135 s and 1103 s. Started earlier, beside Vitest, its stack's start and first
#                                      specs took 2-4 times as long and the run ended no sooner.
#
# A stage that fails stops the run after the stages beside it finish; its output is printed in full. The suites'
# own Makefile targets (make test-engine, test-backend, test-frontend, test-e2e) still run one alone.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
work=$(mktemp -d /tmp/ferry-test.XXXXXX)
started=$SECONDS
timings=()
children=()

# The stages beside the main line are stopped when the run ends early: the package installs by their pids, a stage
# beside with every process it started by its process group's id (beside starts each in a group of its own). A
# Debian install under way is left to finish: stopped half-way, dpkg would leave the machine's packages
# half-configured.
declare -A pid_of=() ticks_of=()
cleanup() {
  local pid
  for pid in "${children[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pid_of[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
  done
  rm -rf "$work"
  # The stages' times are printed after a failure too: a slow machine's run is read from them.
  if [ "$passed" != 1 ] && [ "${#timings[@]}" != 0 ]; then
    echo "make test: failed after $((SECONDS - started)) s; the stages that ended:" >&2
    printf '  %s\n' "${timings[@]}" >&2
  fi
  # After a failure the servers' files stay for a look (the suites say where); after a pass they go.
  if [ "$passed" = 1 ]; then
    rm -rf "$scratch"
  elif [ -n "$scratch" ] && [ -d "$scratch" ]; then
    echo "make test: the servers' files are kept in $scratch (rm -rf it when done)" >&2
  fi
}
scratch=""
passed=0
trap cleanup EXIT

# Where the engine's, the backend's and the end-to-end suite's tests keep their files: a memory-backed directory
# (/dev/shm) when the machine has one with room to spare, else /tmp. Their data is thrown away after each test, and
# what the tests prove of them (a killed process, a lost connection) does not depend on the disk; on this 2-core
# machine the page cache's writeback and the fsyncs of ferryd, MariaDB and PostgreSQL cost a third of a load test's CPU
# on disk (test_switchover_load: 25 s of CPU on disk, 16.5 s in memory). The engine's tests too: those about fsyncs
# count the calls a node makes (group commit: one per group), and power loss is the simulated disk's (vfs::sim), never
# the machine's; on disk they cost 109 CPU-s (65 s alone), in memory 84 CPU-s (42 s).
scratch_dir() {
  local free_kib
  if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
    free_kib=$(df -k --output=avail /dev/shm | tail -n 1)
    if [ "${free_kib:-0}" -ge $((4 * 1024 * 1024)) ]; then
      mktemp -d /dev/shm/ferry.XXXXXX
      return
    fi
  fi
  mktemp -d /tmp/ferry-scratch.XXXXXX
}
scratch=$(scratch_dir)
chmod 755 "$scratch"  # PostgreSQL runs as its own user when this runs as root: it must reach its directory

# The machine's CPU counters (busy and total ticks, /proc/stat), to tell how busy the cores were during a stage.
cpu_ticks() {
  awk '/^cpu /{total=0; for (i=2; i<=NF; i++) total+=$i; print total-$5-$6, total}' /proc/stat
}

# busy_since "BUSY TOTAL": the share of the cores' time spent busy since that reading, in percent.
busy_since() {
  local before=($1) now
  now=($(cpu_ticks))
  echo $(((now[0] - before[0]) * 100 / (now[1] - before[1] + 1)))
}

# stage NAME COMMAND...: runs it in the foreground and records how long it took and how busy the cores were; exits
# the run when it fails.
stage() {
  local name=$1 start=$SECONDS rc ticks
  shift
  echo "== $name"
  ticks=$(cpu_ticks)
  "$@"
  rc=$?
  timings+=("$(printf '%-34s %5d s   cores %3d%% busy' "$name" $((SECONDS - start)) "$(busy_since "$ticks")")")
  if [ "$rc" != 0 ]; then
    echo "make test: $name failed (exit $rc)" >&2
    # What runs beside it finishes first, and its output is printed too.
    [ "${#pid_of[@]}" = 0 ] || joined "${!pid_of[@]}" || true
    exit "$rc"
  fi
}

# beside NAME COMMAND...: runs it in the background in a process group of its own (job control on for that one
# start), its output kept in $work/NAME.log.
beside() {
  local name=$1
  shift
  ticks_of[$name]=$(cpu_ticks)
  set -m
  (
    start=$SECONDS
    "$@" > "$work/$name.log" 2>&1
    echo "$? $((SECONDS - start))" > "$work/$name.rc"
  ) &
  pid_of[$name]=$!
  set +m
  echo "== $name (beside; its output follows when it ends)"
}

# joined NAME...: waits for those background stages, prints their output and times; returns 1 when any failed. A
# failed stage's output comes after the others': the end of a failed run's log names what failed.
joined() {
  local name rc seconds busy passed=() failed=()
  local -A rc_of=() seconds_of=()
  for name in "$@"; do
    wait "${pid_of[$name]}"
  done
  for name in "$@"; do
    busy=$(busy_since "${ticks_of[$name]}")
    unset "pid_of[$name]"
    read -r rc seconds < "$work/$name.rc" || { rc=1; seconds=0; }
    rc_of[$name]=$rc
    seconds_of[$name]=$seconds
    timings+=("$(printf '%-34s %5d s   cores %3d%% busy (beside)' "$name" "$seconds" "$busy")")
    if [ "$rc" = 0 ]; then passed+=("$name"); else failed+=("$name"); fi
  done
  for name in "${passed[@]}" "${failed[@]}"; do
    echo "== $name (exit ${rc_of[$name]}, ${seconds_of[$name]} s)"
    cat "$work/$name.log"
    [ "${rc_of[$name]}" = 0 ] || echo "make test: $name failed (exit ${rc_of[$name]})" >&2
  done
  [ "${#failed[@]}" = 0 ]
}

scripts/ensure-packages.sh start "$work/packages"
{ scripts/ensure-dashboard.sh deps && scripts/ensure-e2e.sh; } > "$work/npm.log" 2>&1 &
npm=$!
children+=("$npm")
stage "Rust and Python tools" bash -c 'scripts/ensure-rust.sh && scripts/ensure-python.sh'
scripts/ensure-backend.sh > "$work/backend-packages.log" 2>&1 &
backend_packages=$!
children+=("$backend_packages")

# Clippy lints the workspace's crates while they compile, not in a pass of its own: cargo runs clippy-driver (rustc
# with clippy's lints added, producing the same artifacts) for every workspace member, the way `cargo clippy` does but
# with code generated, and CLIPPY_ARGS makes any warning an error as `cargo clippy -- -D warnings` would. The lint
# covers what `make lint-engine` covers: every target of the workspace with the failpoints (engine-debug builds
# --all-targets with ENGINE_TEST_FEATURES, ferry-py aside) and ferry-core's library without them and ferry-py (the
# Python module's build). A separate `cargo clippy` type-checks every dependency and workspace crate a second time:
# clippy twice, then these builds took 294 s of CPU from cold; linting as they compile, 216 s. Every cargo command
# below sees the same wrapper, so nothing is built twice; artifacts built with it are kept apart from a plain `cargo
# build`'s (cargo hashes the wrapper into their names).
# Without incremental compilation: its caches are for the next build after an edit, which a run of every suite does
# not have, and keeping them cost the workspace's crates a quarter more CPU (a clean build of its six crates, every
# target, on two cores: 127 CPU-s and 67-72 s with them, 94 CPU-s and 49-50 s without). Every cargo command of the run
# builds this way, so none rebuilds what another built.
export CARGO_INCREMENTAL=0
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver) || { echo "make test: clippy-driver is missing (rustup component add clippy)" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
stage "engine build" bash -c '(cd engine && cargo fmt --all --check) && make --no-print-directory engine-debug'
# The Python module goes into the virtualenv the backend's packages are installed into: after them, not beside.
wait "$backend_packages" || { cat "$work/backend-packages.log" >&2; echo "make test: the backend's Python packages did not install" >&2; exit 1; }
stage "Python module" make --no-print-directory python-module FERRY_PY_PROFILE=dev
stage "Debian packages (waited for)" scripts/ensure-packages.sh wait "$work/packages"
echo "== the engine's, the backend's and the end-to-end suite's test files go to $scratch"
beside "backend" env TMPDIR="$scratch" FERRY_BACKEND_LINT=0 make --no-print-directory -o python-module -o engine-debug test-backend
wait "$npm" || { cat "$work/npm.log" >&2; echo "make test: the dashboard's or the end-to-end suite's npm ci failed" >&2; exit 1; }
children=()  # every one of them has ended
beside "engine and Python module tests" env TMPDIR="$scratch" bash -c \
  'make --no-print-directory test-engine && make --no-print-directory -o python-module -o engine-debug test-python'
beside "lints, dashboard build and Vitest" bash -c \
  'make --no-print-directory lint-backend && make --no-print-directory -o python-module frontend-checks &&
   make --no-print-directory frontend-unit'
joined "engine and Python module tests" "lints, dashboard build and Vitest" ||
  { joined backend || true; exit 1; }
beside "end-to-end" env TMPDIR="$scratch" make --no-print-directory -o python-module -o engine-debug test-e2e
joined "backend" "end-to-end" || exit 1

passed=1
echo "make test: every suite passed in $((SECONDS - started)) s (the cores' busy share counts every process on the machine)"
printf '  %s\n' "${timings[@]}"
