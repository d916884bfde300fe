#!/usr/bin/env bash
# Lints the backend (ruff), type-checks it (mypy) and runs its pytest suite against a throwaway PostgreSQL
# (scripts/ensure-postgres.sh) and real ferryd nodes. FERRY_TEST_DATABASE_URL, when set, names an existing server
# to use instead. FERRY_BACKEND_LINT=0 leaves out ruff and mypy (`make lint-backend`): `make test` runs them beside,
# so that the suite starts at once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export FERRYD_BIN=${FERRYD_BIN:-$root/engine/target/debug/ferryd}
# Everything the run writes (the throwaway PostgreSQL, every test's servers and files) goes under TMPDIR (/tmp
# unless set; `make test` points it at a memory-backed directory when the machine has one, scripts/test.sh).
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fb.XXXXXX")
chmod 755 "$scratch"  # PostgreSQL runs as its own user when this runs as root: it must reach its directory
pg_dir=""
finish() {
  local status=$?
  [ -z "$pg_dir" ] || scripts/ensure-postgres.sh stop "$pg_dir"
  # The tests' files are kept when the run failed, for a look at the servers' logs.
  if [ "$status" = 0 ]; then rm -rf "$scratch"; else echo "the tests' files are kept in $scratch" >&2; fi
}
trap finish EXIT
# Stopped (make test stops what runs beside a failed stage), it still stops its PostgreSQL on the way out.
trap 'exit 143' TERM INT
if [ -z "${FERRY_TEST_DATABASE_URL:-}" ]; then
  pg_dir="$scratch/pg"
  mkdir "$pg_dir"
  FERRY_TEST_DATABASE_URL=$(scripts/ensure-postgres.sh start "$pg_dir")
  export FERRY_TEST_DATABASE_URL
fi
if [ "${FERRY_BACKEND_LINT:-1}" != 0 ]; then make --no-print-directory lint-backend; fi
# Arguments, when given, replace the default test path (e.g. `backend/tests/collection/test_collector.py -x`).
if [ $# -eq 0 ]; then set -- backend/tests; fi
# Tests run in FERRY_TEST_WORKERS processes (pytest-xdist; default 3): each has its own databases (unique
# names), ferryd nodes, mariadbd and HAProxy processes on ports the system hands out, and temporary directories, so
# no two share anything. Most of a test's time is spent waiting on those servers, so on two cores three workers
# finish soonest (measured: 2 → 263 s, 3 → 231 s, 4 → 252 s). Tests go out one at a time to whichever worker is free
# (`--dist load --maxschedchunk 1`), the ones marked `long` first (backend/tests/conftest.py): the longest start at
# once on different workers and the short ones fill in around them, so the run does not end on one worker finishing a
# long test alone. FERRY_TEST_WORKERS=0 runs it in this one process.
# pytest's temporary directories sit in the scratch directory, under a short path: a test's unix sockets (mariadbd's,
# HAProxy's) live in them, and a socket's path must stay under 108 bytes. The longest is mariadbd's,
# <scratch>/t/popen-gw0/<test name, 30 characters>0/mariadb0/s1/mariadbd.sock: 70 bytes and the scratch directory's
# path (`make test`'s /dev/shm/ferry.XXXXXX/fb.XXXXXX: 31).
# The slowest 15 are listed at the end: what to look at first when the suite's time grows.
.venv/bin/pytest -q -n "${FERRY_TEST_WORKERS:-3}" --dist load --maxschedchunk 1 --durations 15 --basetemp "$scratch/t" "$@"
