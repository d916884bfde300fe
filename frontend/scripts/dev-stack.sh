#!/usr/bin/env bash
# A throwaway stack to develop the dashboard against: three release ferryd nodes (node 1 the master, 2 and 3 its
# replicas) with the demo workload, the control plane on SQLite with its collector, the three servers registered,
# and an admin, an operator and a viewer token. Everything lives in one temp dir; ports are offset from
# `make up`'s so both can run. Then `FERRY_API_URL=http://127.0.0.1:$API_PORT npm run dev`.
#   scripts/dev-stack.sh start   prints the dir, the API URL and the tokens
#   scripts/dev-stack.sh stop DIR
set -euo pipefail
frontend=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$frontend/.." && pwd)
bin="$root/engine/target/release"
python="$root/.venv/bin/python"
API_PORT=${API_PORT:-18000}
BASE=${BASE_PORT:-17300}

stop() {
  local dir=$1
  for pidfile in "$dir"/*.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
}

if [ "${1:-start}" = stop ]; then stop "$2"; exit 0; fi

dir=$(mktemp -d /tmp/ferry-dev-stack.XXXXXX)
python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > "$dir/node-token"
token=$(cat "$dir/node-token")
for i in 1 2 3; do
  "$bin/ferryd" --server-id "$i" --data-dir "$dir/node$i" --listen "127.0.0.1:$((BASE + i))" \
    --admin "127.0.0.1:$((BASE + 100 + i))" --admin-token-file "$dir/node-token" --advertise-host 127.0.0.1 \
    > "$dir/node$i.ready" 2> "$dir/node$i.log" < /dev/null &
  echo $! > "$dir/node$i.pid"
done
for i in 1 2 3; do
  for _ in $(seq 1 100); do [ -s "$dir/node$i.ready" ] && break; sleep 0.1; done
done
for i in 2 3; do
  admin="http://127.0.0.1:$((BASE + 100 + i))"
  curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d "{\"master\": \"127.0.0.1:$((BASE + 1))\", \"use_gtid\": \"slave_pos\"}" "$admin/v1/replication/main/change-master" > /dev/null
  curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{}' \
    "$admin/v1/replication/main/start" > /dev/null
done
"$bin/ferry-bench" demo --addr "127.0.0.1:$((BASE + 1))" --rate "${RATE:-10}" --domains 3 > "$dir/workload.log" 2>&1 < /dev/null &
echo $! > "$dir/workload.pid"

export DATABASE_URL="sqlite:///$dir/control.sqlite3" FERRY_NODE_TOKEN_FILE="$dir/node-token" FERRY_ENVIRONMENT=development
"$python" -m ferry_control.cli migrate > "$dir/migrate.log" 2>&1
for role in admin operator viewer; do
  "$python" -m ferry_control.cli create-token --name "dev-$role" --role "$role" | tail -n 1 > "$dir/token-$role"
done
"$root/.venv/bin/uvicorn" --factory ferry_control.main:create_app --host 127.0.0.1 --port "$API_PORT" \
  > "$dir/api.log" 2>&1 < /dev/null &
echo $! > "$dir/api.pid"
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$API_PORT/api/v1/health" > /dev/null 2>&1 && break; sleep 0.2; done
admin_token=$(cat "$dir/token-admin")
api() { curl -fsS -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' "$@"; }
cluster=$(api -d '{"name": "dev", "description": "dev stack", "admin_port_offset": 100}' \
  "http://127.0.0.1:$API_PORT/api/v1/clusters" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["id"])')
# Registered one by one (discovery would leave the replicas without ports: it does not read what they advertise).
for i in 1 2 3; do
  api -d "{\"name\": \"node$i\", \"host\": \"127.0.0.1\", \"protocol_port\": $((BASE + i)), \"admin_port\": $((BASE + 100 + i))}" \
    "http://127.0.0.1:$API_PORT/api/v1/clusters/$cluster/servers" > /dev/null
done
cat <<EOT
dev stack in $dir
  API       http://127.0.0.1:$API_PORT   (cluster $cluster)
  admin     $(cat "$dir/token-admin")
  operator  $(cat "$dir/token-operator")
  viewer    $(cat "$dir/token-viewer")
  stop:     $0 stop $dir
EOT
