#!/usr/bin/env bash
# Starts the local Ferry stack without Docker: three ferryd nodes on loopback (node 1 the master, nodes 2 and 3
# replicating from it, wired through the node admin API), a demo workload writing in three domains on node 1, and
# the control plane API (uvicorn, embedded SQLite at .run/control.sqlite3, migrated before it starts) with the three
# nodes registered as the cluster "local". Prints the API URL and a freshly created admin token. State lives in
# .run/ (data, logs, pids, tokens); `make down` stops it all. FERRY_API_PORT (default 8000) moves the API.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
run="$root/.run"
cd "$root"

scripts/ensure-rust.sh
echo "building the engine (release)…"
cargo build --release --locked --manifest-path engine/Cargo.toml -p ferryd -p ferry-bench
bin="$root/engine/target/release"

mkdir -p "$run"
token_file="$run/admin-token"
if [ ! -s "$token_file" ]; then
  python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > "$token_file"
  chmod 600 "$token_file"
fi

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

for i in 1 2 3; do
  dir="$run/node$i"
  mkdir -p "$dir"
  if alive "$dir/pid"; then
    echo "node $i already running (pid $(cat "$dir/pid"))"
    continue
  fi
  rm -f "$dir/ready.json"
  nohup "$bin/ferryd" --server-id "$i" --data-dir "$dir/data" \
    --listen "127.0.0.1:730$i" --admin "127.0.0.1:740$i" --admin-token-file "$token_file" \
    > "$dir/ready.json" 2> "$dir/ferryd.log" < /dev/null &
  echo $! > "$dir/pid"
done

for i in 1 2 3; do
  dir="$run/node$i"
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

admin_token=$(cat "$token_file")
node_post() { # node_post ADMIN_PORT PATH JSON
  curl -fsS -X POST -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
    -d "$3" "http://127.0.0.1:$1$2" > /dev/null
}
connections() { # how many replication connections node N has
  curl -fsS "http://127.0.0.1:740$1/v1/replication" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["connections"]))'
}
# Fresh nodes (no connection anywhere) become node 1 → nodes 2 and 3; a topology changed since (a switchover) is kept.
if [ "$(connections 1)" = 0 ] && [ "$(connections 2)" = 0 ] && [ "$(connections 3)" = 0 ]; then
  for i in 2 3; do
    node_post "740$i" /v1/replication/main/change-master '{"master": "127.0.0.1:7301", "use_gtid": "slave_pos"}'
    node_post "740$i" /v1/replication/main/start '{}'
  done
  echo "nodes 2 and 3 replicate from node 1"
fi

if ! alive "$run/workload.pid"; then
  nohup "$bin/ferry-bench" demo --addr 127.0.0.1:7301 --rate 20 --domains 3 \
    > "$run/workload.log" 2>&1 < /dev/null &
  echo $! > "$run/workload.pid"
fi

# The dashboard, built once (the API serves frontend/dist from its own origin).
if [ ! -f frontend/dist/index.html ] || [ -n "$(find frontend/src frontend/index.html frontend/package-lock.json -newer frontend/dist/index.html 2>/dev/null | head -n 1)" ]; then
  echo "building the dashboard…"
  command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js 20 with npm, then run this again" >&2; exit 1; }
  (cd frontend && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run --silent build)
fi

# The control plane: the backend venv (pinned requirements) and ferry_engine built into it.
scripts/ensure-backend.sh
if ! .venv/bin/python -c 'import ferry_engine' 2>/dev/null; then
  make -s python-module
fi
api_port=${FERRY_API_PORT:-8000}
api="http://127.0.0.1:$api_port"
export FERRY_NODE_TOKEN_FILE="$token_file"
unset DATABASE_URL FERRY_DATABASE_URL  # the embedded SQLite default: .run/control.sqlite3
if ! alive "$run/api.pid"; then
  if curl -fsS "$api/api/v1/health" > /dev/null 2>&1; then
    echo "port $api_port already serves another API (not started by make up here): stop it, or set FERRY_API_PORT" >&2
    exit 1
  fi
  (cd backend && ../.venv/bin/python -m ferry_control.cli migrate) > "$run/api.log" 2>&1 \
    || { echo "migrating the control plane database failed; see $run/api.log" >&2; exit 1; }
  # exec: the recorded pid is uvicorn itself (make down stops it), and nothing keeps this script's output open.
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
  curl -fsS "$api/api/v1/health" > /dev/null 2>&1 && break
  sleep 0.1
done
api_token=$(cd backend && ../.venv/bin/python -m ferry_control.cli create-token --name "admin-$(date +%Y%m%d-%H%M%S)-$$" --role admin)
api_call() { # api_call METHOD PATH [JSON]
  curl -fsS -X "$1" -H "Authorization: Bearer $api_token" -H 'Content-Type: application/json' ${3:+-d "$3"} "$api$2"
}
cluster_id=$(api_call GET /api/v1/clusters | python3 -c 'import json,sys; print(next((c["id"] for c in json.load(sys.stdin) if c["name"] == "local"), ""))')
if [ -z "$cluster_id" ]; then
  cluster_id=$(api_call POST /api/v1/clusters '{"name": "local", "description": "make up", "admin_port_offset": 100}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  for i in 1 2 3; do
    api_call POST "/api/v1/clusters/$cluster_id/servers" \
      "{\"name\": \"node$i\", \"host\": \"127.0.0.1\", \"protocol_port\": 730$i, \"admin_port\": 740$i}" > /dev/null
  done
  echo "registered the three nodes as cluster \"local\" (id $cluster_id)"
fi

cat <<EOT

Ferry is up.
  node 1  protocol 127.0.0.1:7301  admin http://127.0.0.1:7401/v1/status  (demo workload writes here, domains 1-3)
  node 2  protocol 127.0.0.1:7302  admin http://127.0.0.1:7402/v1/status
  node 3  protocol 127.0.0.1:7303  admin http://127.0.0.1:7403/v1/status
  metrics http://127.0.0.1:740N/metrics   recent transactions http://127.0.0.1:740N/v1/binlog/events
  node admin token (for mutating node admin calls): $(cat "$token_file")
  dashboard          $api/   (sign in with the API admin token below)
  control plane API  $api/docs   (cluster "local" is id $cluster_id; log: .run/api.log)
  API admin token    $api_token
    e.g. curl -H "Authorization: Bearer $api_token" $api/api/v1/clusters/$cluster_id/topology
  inspect a binlog: engine/target/release/ferry-binlog .run/node1/data/binlog
  logs and data: .run/   stop everything: make down
EOT
