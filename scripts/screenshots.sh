#!/usr/bin/env bash
# The operator's guide's pictures (docs/screenshots/guide-*.png, shown in docs/operator-guide.md), taken by Playwright
# in Debian's Chromium from the running `make up` stack (.run/stack.json): e2e/specs/guide.spec.ts walks the tour and
# checks what each picture shows. Needs the stack up with seed000 (plain `make up` starts it). When the ferryd
# cluster has had no drill yet it runs one (rotation, switched back) so the histories have something to show; the
# switchover is only previewed. FERRY_E2E_STACK=PATH/stack.json takes them from another stack started by
# scripts/stack.sh as `make up` starts it (seed000 with its delayed and parallel replicas, its servers named by
# scripts/name_servers.py). Arguments go to `playwright test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
stack_json=$(realpath -m "${FERRY_E2E_STACK:-$root/.run/stack.json}")
[ -f "$stack_json" ] || { echo "no stack at $stack_json: run \`make up\` first" >&2; exit 1; }
api=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["api"])' "$stack_json")
curl -fsS "$api/api/v1/health" > /dev/null || { echo "the API at $api does not answer: run \`make up\` first" >&2; exit 1; }

chromium=${FERRY_E2E_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "installing Chromium from Debian packages…" >&2
  scripts/apt-install.sh chromium
fi
cd e2e
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.package-lock.sha 2>/dev/null)" != "$want" ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
  echo "$want" > node_modules/.package-lock.sha
fi
# Its own output directory: an end-to-end run at the same time uses e2e/test-results.
results=$(mktemp -d /tmp/ferry-screenshots.XXXXXX)
trap 'status=$?; if [ "$status" = 0 ]; then rm -rf "$results"; else echo "traces and screenshots of the failure: $results" >&2; fi' EXIT
FERRY_E2E_CHROMIUM=$chromium FERRY_E2E_STACK=$stack_json FERRY_E2E_SCREENSHOTS=1 \
  npx playwright test --output "$results" specs/guide.spec.ts "$@"
echo "pictures written: $(cd "$root" && ls docs/screenshots/guide-*.png | tr '\n' ' ')"
