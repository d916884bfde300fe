#!/usr/bin/env bash
# Starts or stops one Ferry stack without Docker, from binaries already built: three ferryd nodes on loopback,
# wired and registered by `cli bootstrap` (node 1 the master, nodes 2 and 3 read-only replicas of it, the three
# the cluster "local" in the control plane's database, migrated first), the demo workload (it writes in three
# domains to whichever node is the master), and the control plane API (uvicorn) serving the built dashboard.
# `make up` and the end-to-end suite both start their stack with this.
#
#   scripts/stack.sh start   start what is not running; write $FERRY_RUN_DIR/stack.json (API URL, an admin
#                            API token, the cluster's id, the node addresses, the node admin token)
#   scripts/stack.sh stop    stop the API and the workload, then the nodes, each with SIGTERM
#
# Environment (defaults are what `make up` uses):
#   FERRY_RUN_DIR          state: data, logs, pids, tokens                       (.run)
#   FERRY_PORT_BASE        node N listens on BASE+N, its admin API on BASE+100+N  (7300)
#   FERRY_API_PORT         the API's port                                         (8000)
#   FERRY_BIN_DIR          where ferryd and ferry-bench are                       (engine/target/release)
#   FERRY_STACK_DATABASE_URL  the API's database                    (unset: embedded SQLite in FERRY_RUN_DIR)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
run=$(realpath -m "${FERRY_RUN_DIR:-$root/.run}")
base=${FERRY_PORT_BASE:-7300}
api_port=${FERRY_API_PORT:-8000}
bin=$(realpath -m "${FERRY_BIN_DIR:-$root/engine/target/release}")
api="http://127.0.0.1:$api_port"
token_file="$run/admin-token"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
protocol_port() { echo $((base + $1)); }
admin_port() { echo $((base + 100 + $1)); }

stop_one() { # stop_one PIDFILE NAME
  local pidfile=$1 name=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped $name"
  fi
  rm -f "$pidfile"
}

stop() {
  stop_one "$run/api.pid" "control plane API"
  stop_one "$run/workload.pid" "demo workload"
  for i in 1 2 3; do stop_one "$run/node$i/pid" "node $i"; done
}

start_nodes() {
  for i in 1 2 3; do
    local dir="$run/node$i"
    mkdir -p "$dir"
    if alive "$dir/pid"; then
      echo "node $i already running (pid $(cat "$dir/pid"))"
      continue
    fi
    rm -f "$dir/ready.json"
    nohup "$bin/ferryd" --server-id "$i" --data-dir "$dir/data" \
      --listen "127.0.0.1:$(protocol_port "$i")" --admin "127.0.0.1:$(admin_port "$i")" \
      --admin-token-file "$token_file" > "$dir/ready.json" 2> "$dir/ferryd.log" < /dev/null &
    echo $! > "$dir/pid"
  done
  for i in 1 2 3; do
    local dir="$run/node$i"
    for _ in $(seq 1 300); do
      [ -s "$dir/ready.json" ] && break
      if ! alive "$dir/pid"; then
        echo "node $i failed to start; last lines of $dir/ferryd.log:" >&2
        tail -n 20 "$dir/ferryd.log" >&2
        exit 1
      fi
      sleep 0.1
    done
    [ -s "$dir/ready.json" ] || { echo "node $i did not become ready" >&2; exit 1; }
  done
}

# The control plane's database and the nodes' admin token, for the CLI and the API. A local stack is a developer's:
# the development environment, with a secret key generated into the state directory (docs/security.md).
control_plane_env() {
  export FERRY_ENVIRONMENT=development FERRY_DEV_SECRET_KEY_FILE="$run/secret.key"
  export FERRY_NODE_TOKEN_FILE="$token_file"
  export FERRY_DATABASE_URL=${FERRY_STACK_DATABASE_URL:-sqlite:///$run/control.sqlite3}
  unset DATABASE_URL FERRY_NODE_TOKEN
}
cli() { (cd backend && ../.venv/bin/python -m ferry_control.cli "$@"); }

# Migrates the database, then `cli bootstrap`: fresh nodes (no connection anywhere) become node 1 → nodes 2 and 3,
# the replicas read-only (only replication writes to them, so no client can give them errant transactions), while
# a topology changed since (a switchover) is kept; the three are registered as cluster "local" unless it exists.
bootstrap() {
  if ! alive "$run/api.pid"; then
    cli migrate > "$run/api.log" 2>&1 \
      || { echo "migrating the control plane database failed; see $run/api.log" >&2; exit 1; }
  fi
  local nodes=() i
  for i in 1 2 3; do
    nodes+=(--node "node$i=127.0.0.1:$(protocol_port "$i"),http://127.0.0.1:$(admin_port "$i")")
  done
  cluster_id=$(cli bootstrap --cluster local --description "make up" "${nodes[@]}" --wait-s 30) \
    || { echo "bootstrapping the cluster failed (see above)" >&2; exit 1; }
}

start_workload() {
  alive "$run/workload.pid" && return 0
  nohup "$bin/ferry-bench" demo --rate 20 --domains 3 \
    --addr "127.0.0.1:$(protocol_port 1),127.0.0.1:$(protocol_port 2),127.0.0.1:$(protocol_port 3)" \
    > "$run/workload.log" 2>&1 < /dev/null &
  echo $! > "$run/workload.pid"
}

start_api() {
  if ! alive "$run/api.pid"; then
    if curl -fsS "$api/api/v1/health" > /dev/null 2>&1; then
      echo "port $api_port already serves another API (not started from $run): stop it, or set FERRY_API_PORT" >&2
      exit 1
    fi
    # exec: the recorded pid is uvicorn itself, and nothing keeps this script's output open.
    (cd backend && exec nohup ../.venv/bin/uvicorn --factory ferry_control.main:create_app --host 127.0.0.1 \
      --port "$api_port") >> "$run/api.log" 2>&1 < /dev/null &
    echo $! > "$run/api.pid"
  fi
  for _ in $(seq 1 300); do
    if ! alive "$run/api.pid"; then
      echo "the API failed to start; last lines of $run/api.log:" >&2
      tail -n 20 "$run/api.log" >&2
      exit 1
    fi
    curl -fsS "$api/api/v1/health" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the API did not answer on $api within 30 s; see $run/api.log" >&2
  exit 1
}

create_api_token() {
  api_token=$(cli create-token --name "admin-$(date +%Y%m%d-%H%M%S)-$$" --role admin)
}

write_stack_json() {
  API="$api" API_TOKEN="$api_token" CLUSTER_ID="$cluster_id" NODE_TOKEN="$(cat "$token_file")" BASE="$base" \
    python3 -c '
import json, os
base = int(os.environ["BASE"])
print(json.dumps({
    "api": os.environ["API"],
    "admin_token": os.environ["API_TOKEN"],
    "cluster_id": int(os.environ["CLUSTER_ID"]),
    "cluster_name": "local",
    "node_token": os.environ["NODE_TOKEN"],
    "nodes": [{"name": f"node{i}", "protocol": f"127.0.0.1:{base + i}", "admin": f"http://127.0.0.1:{base + 100 + i}"}
              for i in (1, 2, 3)],
}, indent=2))' > "$run/stack.json"
  chmod 600 "$run/stack.json"
}

start() {
  for exe in ferryd ferry-bench; do
    [ -x "$bin/$exe" ] || { echo "$bin/$exe is missing: build the engine first (make up does)" >&2; exit 1; }
  done
  mkdir -p "$run"
  if [ ! -s "$token_file" ]; then
    python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > "$token_file"
    chmod 600 "$token_file"
  fi
  control_plane_env
  start_nodes
  bootstrap
  start_workload
  start_api
  create_api_token
  write_stack_json
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
