#!/usr/bin/env bash
# Creates the project's virtualenv (.venv) when absent and installs the pinned Python tools into it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
requirements="$root/engine/crates/ferry-py/requirements-dev.txt"
stamp="$venv/.requirements-dev.sha"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet -r "$requirements"
  echo "$want" > "$stamp"
fi
