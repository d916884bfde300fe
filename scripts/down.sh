#!/usr/bin/env bash
# Stops what `make up` started: the control plane API and the demo workload first, then the nodes, each with
# SIGTERM (the API lets running operations finish; the nodes checkpoint).
set -euo pipefail
run="$(cd "$(dirname "$0")/.." && pwd)/.run"
stop() {
  local pidfile=$1 name=$2
  [ -f "$pidfile" ] || return 0
  local pid; pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped $name"
  fi
  rm -f "$pidfile"
}
stop "$run/api.pid" "control plane API"
stop "$run/workload.pid" "demo workload"
for i in 1 2 3; do stop "$run/node$i/pid" "node $i"; done
