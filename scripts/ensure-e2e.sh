#!/usr/bin/env bash
# Installs the end-to-end suite's npm packages (e2e/: Playwright's test runner, never its browsers: the suite uses
# Debian's Chromium) when node_modules is missing or older than package-lock.json. scripts/test-e2e.sh runs it;
# `make test` runs it early, in the background, beside the engine's build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/e2e"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.package-lock.sha 2>/dev/null)" != "$want" ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
  echo "$want" > node_modules/.package-lock.sha
fi
