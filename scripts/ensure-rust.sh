#!/usr/bin/env bash
# Checks that the Rust toolchain the engine needs is present, and adds the rustfmt/clippy components if missing.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust (stable) with rustup, then run this again" >&2
  exit 1
fi
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^${component}"; then
    rustup component add "$component"
  fi
done
