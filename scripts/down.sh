#!/usr/bin/env bash
# `make down`: stops what `make up` started (scripts/stack.sh stop on .run/): the control plane API and the demo
# workload first, then the nodes, each with SIGTERM (the API lets running operations finish; the nodes checkpoint).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
FERRY_RUN_DIR="$root/.run" exec "$root/scripts/stack.sh" stop
