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
# --no-compile: a module's bytecode is written when it is first imported, not for every file of every package at
# install (most are never imported here). The backend's packages installed in 14 s and 13 CPU-s so, 25 s and 24 CPU-s
# compiling all.
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/pip" install --quiet --no-compile --upgrade pip
  "$venv/bin/pip" install --quiet --no-compile -r "$requirements"
  echo "$want" > "$stamp"
fi
