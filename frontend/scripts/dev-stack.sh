#!/usr/bin/env bash
# A throwaway stack to develop the dashboard against (scripts/stack.sh in a temp dir, ports offset from `make
# up`'s so both can run): three release ferryd nodes (node 1 the master, 2 and 3 its read-only replicas), the
# demo workload, the control plane on SQLite with the servers registered as cluster "local", and an admin, an
# operator and a viewer token. Then `FERRY_API_URL=http://127.0.0.1:$API_PORT npm run dev`.
#   scripts/dev-stack.sh start   prints the dir, the API URL and the tokens
#   scripts/dev-stack.sh stop DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export FERRY_BIN_DIR=${FERRY_BIN_DIR:-$root/engine/target/release} FERRY_PORT_BASE=${BASE_PORT:-17300} FERRY_API_PORT=${API_PORT:-18000}
unset FERRY_STACK_DATABASE_URL

if [ "${1:-start}" = stop ]; then FERRY_RUN_DIR=$2 exec "$root/scripts/stack.sh" stop; fi

export FERRY_RUN_DIR=$(mktemp -d /tmp/ferry-dev-stack.XXXXXX)
"$root/scripts/stack.sh" start > "$FERRY_RUN_DIR/start.log"
python3 - "$FERRY_RUN_DIR/stack.json" <<'PY'
import json, sys, urllib.request
stack = json.load(open(sys.argv[1]))
tokens = {"admin": stack["admin_token"]}
for role in ("operator", "viewer"):
    request = urllib.request.Request(
        f"{stack['api']}/api/v1/tokens", method="POST",
        data=json.dumps({"name": f"dev-{role}", "role": role}).encode(),
        headers={"Authorization": f"Bearer {stack['admin_token']}", "Content-Type": "application/json"})
    tokens[role] = json.load(urllib.request.urlopen(request))["token"]
print(f"dir {sys.argv[1].rsplit('/', 1)[0]}\napi {stack['api']}")
for role, token in tokens.items():
    print(f"{role} {token}")
PY
