#!/usr/bin/env bash
# The end-to-end suite (e2e/): Playwright in Debian's Chromium (installed from Debian's packages when absent)
# against a real stack started by scripts/stack.sh — three ferryd nodes, the demo workload, the two-master MariaDB
# cluster with its load writer (Debian's mariadb-server, installed by scripts/ensure-mariadb.sh when absent), the API
# on a throwaway PostgreSQL (scripts/ensure-postgres.sh) serving the built dashboard — all stopped afterwards.
# Arguments go to `playwright test` (e.g. a spec file). FERRY_E2E_SCREENSHOTS=1 writes docs/screenshots/*.png.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Chromium's headless shell (Debian's chromium-headless-shell: the same Blink and V8 as the chromium package, without
# the browser's windowing layers), which Playwright itself runs for headless tests: the whole suite took 94 s of CPU
# in it against 155 s in the full browser (60 processes against 194), and 200 s of wall time against 238.
chromium=${FERRY_E2E_CHROMIUM:-/usr/bin/chromium-headless-shell}
if [ ! -x "$chromium" ]; then
  echo "installing Chromium's headless shell from Debian packages…" >&2
  scripts/apt-install.sh chromium-headless-shell
fi
export FERRY_E2E_CHROMIUM=$chromium

scripts/ensure-dashboard.sh
scripts/ensure-mariadb.sh > /dev/null
scripts/ensure-e2e.sh
(cd e2e && npm run --silent typecheck)

work=$(mktemp -d "${TMPDIR:-/tmp}/ferry-e2e.XXXXXX")  # TMPDIR: see scripts/test.sh
chmod 755 "$work"  # PostgreSQL runs as its own user when this runs as root: it must reach its directory
export FERRY_RUN_DIR="$work/stack"
export FERRY_BIN_DIR=${FERRY_BIN_DIR:-$root/engine/target/debug}
export FERRY_PORT_BASE=${FERRY_E2E_PORT_BASE:-27300}
export FERRY_API_PORT=${FERRY_E2E_API_PORT:-28000}
# The two-master MariaDB cluster `seed000` beside the ferryd nodes, on ports 23321-23325, as `make up` starts it: server 4 a
# replica delayed by FERRY_MARIADB_DELAY_S, 30 s (specs/mariadb.spec.ts, specs/demo.spec.ts).
export FERRY_STACK=ferryd FERRY_MARIADB_SEED000=1 FERRY_MARIADB_DELAY_S=${FERRY_MARIADB_DELAY_S:-30} \
  FERRY_MARIADB_REPORT_LOCK_S=${FERRY_MARIADB_REPORT_LOCK_S:-8}
export FERRY_MARIADB_PORT_BASE=${FERRY_E2E_MARIADB_PORT_BASE:-23300}
# The proxies ask for the writer role once a second rather than four times: Ferry moves the writer through their admin
# sockets at once, which is what the specs watch, and the checks at 250 ms cost a twentieth of a core
# (the API's and PostgreSQL's time, the stack idle: 11.5 % and 2.5 % of a core against 7.2 % and 1.7 % at 1 s).
export FERRY_HAPROXY_CHECK_INTERVAL_MS=${FERRY_HAPROXY_CHECK_INTERVAL_MS:-1000}
cleanup() {
  local status=$?
  scripts/stack.sh stop > /dev/null || true
  scripts/ensure-postgres.sh stop "$work/pg" || true
  if [ "$status" != 0 ]; then
    echo "the end-to-end run failed; the stack's logs:" >&2
    for log in "$FERRY_RUN_DIR"/api.log "$FERRY_RUN_DIR"/worker.log "$FERRY_RUN_DIR"/workload.log "$FERRY_RUN_DIR"/node*/ferryd.log \
      "$FERRY_RUN_DIR"/seed000.log "$FERRY_RUN_DIR"/load-seed000.log "$FERRY_RUN_DIR"/report-lock-seed000.log "$FERRY_RUN_DIR"/seed000/s*/error.log; do
      [ -f "$log" ] && { echo "--- $log (last 40 lines)" >&2; tail -n 40 "$log" >&2; }
    done
    # Playwright's account of what failed, again after the logs: a CI log shows its tail, where it would be lost.
    if [ -s "$work/playwright.log" ]; then
      echo "--- what failed (Playwright's summary, from its first failure; the whole run above)" >&2
      sed -n '/^  1) /,$p' "$work/playwright.log" | head -n 150 >&2
    fi
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# Every server of this stack is on loopback, where the specs' operators register and discover: trusted, as a
# deployment lists its database networks (docs/security.md "Credentials follow an address only with an admin's say").
export FERRY_SERVER_TRUSTED_HOSTS='["127.0.0.0/8"]'
FERRY_STACK_DATABASE_URL=$(scripts/ensure-postgres.sh start "$work/pg")
export FERRY_STACK_DATABASE_URL
scripts/stack.sh start
export FERRY_E2E_STACK="$FERRY_RUN_DIR/stack.json"
(cd e2e && npx playwright test "$@") 2>&1 | tee "$work/playwright.log"
