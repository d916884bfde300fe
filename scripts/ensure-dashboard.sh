#!/usr/bin/env bash
# Builds the dashboard into frontend/dist when it is missing or older than its sources (npm ci first when
# node_modules is missing or package-lock.json changed). The API serves frontend/dist from its own origin.
#   scripts/ensure-dashboard.sh        dependencies, then the build when stale
#   scripts/ensure-dashboard.sh deps   dependencies only
set -euo pipefail
cd "$(dirname "$0")/../frontend"
command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 20 with npm, then run this again" >&2; exit 1; }
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.package-lock.sha 2>/dev/null)" != "$want" ]; then
  npm ci --no-audit --no-fund
  echo "$want" > node_modules/.package-lock.sha
fi
[ "${1:-}" = deps ] && exit 0
if [ ! -f dist/index.html ] || [ -n "$(find src index.html package-lock.json vite.config.ts -newer dist/index.html 2>/dev/null | head -n 1)" ]; then
  echo "building the dashboard…"
  npm run --silent build
fi
