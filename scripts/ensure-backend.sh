#!/usr/bin/env bash
# Makes the project's virtualenv (.venv, via ensure-python.sh) ready for the backend: installs the pinned
# backend/requirements.txt, and puts backend/ on the venv's path (a .pth file: the ferry_control package is used
# from the work tree, like an editable install, without a build step), with the `ferryctl` command in .venv/bin (the
# console script backend/pyproject.toml declares for real installs).
# ferry_engine is built into the same venv by `make test-python`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/ensure-python.sh"
venv="$root/.venv"
requirements="$root/backend/requirements.txt"
stamp="$venv/.requirements-backend.sha"
want=$( (cat "$requirements" "$root/backend/pyproject.toml") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/pip" install --quiet -r "$requirements"
  echo "$want" > "$stamp"
fi
site_packages=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$root/backend" > "$site_packages/ferry_control.pth"
printf '#!%s\nfrom ferry_control.ctl.main import main\n\nmain()\n' "$venv/bin/python" > "$venv/bin/ferryctl"
chmod +x "$venv/bin/ferryctl"
