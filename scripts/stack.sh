#!/usr/bin/env bash
# Starts or stops one Ferry stack without Docker, from binaries already built: three ferryd nodes on loopback,
# wired and registered by `cli bootstrap` (node 1 the master, nodes 2 and 3 read-only replicas of it, the three
# the cluster "local" in the control plane's database, migrated first), the demo workload (it writes in three
# domains to whichever node is the master), and the control plane: its web process (uvicorn, FERRY_ROLE=web) serving
# the API and the built dashboard, and its worker (`python -m ferry_control worker`: collection, operations, the
# failover monitor, drills), so no number of open dashboards delays an operation.
# `make up` and the end-to-end suite both start their stack with this.
#
# With FERRY_STACK=mariadb it starts MariaDB instead of ferryd: a three-server cluster on loopback
# (scripts/mariadb_cluster.py, shape star: server 1 the master, 2 and 3 read-only replicas) written to by
# scripts/mariadb_load.py in domains 1-3 at a varying rate, registered with its logins and discovered from its
# master by `cli register` as the cluster "mariadb". FERRY_MARIADB_SEED000=1 (the default with FERRY_STACK=mariadb,
# and possible beside the ferryd stack too: the end-to-end suite does that) adds the two-master shape as the cluster
# "seed000": masters 1 and 2 writing in domains 1 and 2, server 3 a multi-source replica of both (connections m1,
# m2), servers 4 and 5 replicas of server 3; discovered from server 3. MariaDB's data is disposable: `stop` stops
# each mariadbd by pid and removes its directories (and the MariaDB stack's control plane database).
#
# Each MariaDB cluster gets a private HAProxy in front of it (Debian's haproxy; the configuration Ferry renders,
# in $FERRY_RUN_DIR/haproxy-NAME.cfg, its admin socket beside it and listed in the worker's
# FERRY_HAPROXY_ADMIN_SOCKETS, so switchovers and failovers move its writer at once): writer and reader ports
# MARIADB_PORT_BASE+41/+42 for "mariadb", +43/+44 for "seed000". The "mariadb" cluster's load writer writes through
# the writer port.
#
#   scripts/stack.sh start   start what is not running; write $FERRY_RUN_DIR/stack.json (API URL, an admin
#                            API token, the cluster's id, the node addresses, the node admin token, the file
#                            with the worker's pid, and the MariaDB clusters: name, id, directory with its
#                            cluster.json)
#   scripts/stack.sh stop    stop the API and the workloads, then the nodes and MariaDB servers, each with SIGTERM
#
# Environment (defaults are what `make up` uses):
#   FERRY_STACK            ferryd or mariadb                                       (ferryd)
#   FERRY_MARIADB_SEED000  1: also the two-master MariaDB cluster `seed000`     (1 with mariadb, else 0; scripts/up.sh makes it 1)
#   FERRY_MARIADB_DELAY_S  seed000's server 4 a delayed replica by this much, so lag shows
#                          (30 with mariadb, else 0; scripts/up.sh and the end-to-end suite make it 30)
#   FERRY_MARIADB_REPORT_LOCK_S  seed000's server 5 applies in parallel and a demo "report" holds a read lock on
#                          domain 1's table there this long of every 20 s, so that domain's lag climbs and drains
#                          while domain 2 keeps applying (0: off; 8 with mariadb, else 0; scripts/up.sh and the
#                          end-to-end suite make it 8)
#   FERRY_RUN_DIR          state: data, logs, pids, tokens                       (.run)
#   FERRY_PORT_BASE        node N listens on BASE+N, its admin API on BASE+100+N  (7300)
#   FERRY_MARIADB_PORT_BASE  star server N on BASE+10+N, seed000 server N on BASE+20+N   (3300)
#   FERRY_API_PORT         the API's port                                         (8000)
#   FERRY_HAPROXY_CHECK_INTERVAL_MS  how often the proxies ask for the writer role (250; the reader's: 1 s or this)
#   FERRY_BIN_DIR          where ferryd and ferry-bench are                       (engine/target/release)
#   FERRY_STACK_DATABASE_URL  the API's database     (unset: embedded SQLite in FERRY_RUN_DIR, one file per stack)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
run=$(realpath -m "${FERRY_RUN_DIR:-$root/.run}")
base=${FERRY_PORT_BASE:-7300}
stack_kind=${FERRY_STACK:-ferryd}
case "$stack_kind" in
  ferryd) seed000=${FERRY_MARIADB_SEED000:-0} delay_s=${FERRY_MARIADB_DELAY_S:-0} lock_s=${FERRY_MARIADB_REPORT_LOCK_S:-0} ;;
  mariadb) seed000=${FERRY_MARIADB_SEED000:-1} delay_s=${FERRY_MARIADB_DELAY_S:-30} lock_s=${FERRY_MARIADB_REPORT_LOCK_S:-8} ;;
  *) echo "FERRY_STACK must be ferryd or mariadb, not $stack_kind" >&2; exit 2 ;;
esac
mariadb_base=${FERRY_MARIADB_PORT_BASE:-3300}
api_port=${FERRY_API_PORT:-8000}
check_interval_ms=${FERRY_HAPROXY_CHECK_INTERVAL_MS:-250}
bin=$(realpath -m "${FERRY_BIN_DIR:-$root/engine/target/release}")
api="http://127.0.0.1:$api_port"
token_file="$run/admin-token"

alive() { [ -f "$1" ] && running "$(cat "$1")"; }
protocol_port() { echo $((base + $1)); }
admin_port() { echo $((base + 100 + $1)); }

# Whether the process runs: one that exited but is not reaped yet (a zombie until init collects it, which can take
# a second or more) is gone.
running() {
  local state
  state=$(cut -d')' -f2- "/proc/$1/stat" 2>/dev/null | awk '{print $1}')
  [ -n "$state" ] && [ "$state" != Z ]
}

stop_group() { # stop_group PIDFILE=NAME...: every one SIGTERMed at once, each awaited (SIGKILL after 10 s)
  local item pidfile pid
  local -a asked=()
  for item in "$@"; do
    pidfile=${item%%=*}
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if running "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      asked+=("$item")
    else
      rm -f "$pidfile"
    fi
  done
  for item in "${asked[@]}"; do
    pidfile=${item%%=*}
    pid=$(cat "$pidfile")
    for _ in $(seq 1 100); do running "$pid" || break; sleep 0.1; done
    running "$pid" && kill -KILL "$pid"
    echo "stopped ${item#*=}"
    rm -f "$pidfile"
  done
}

# Whatever a start left, whichever FERRY_STACK it had. The control plane first (it must not see the servers go and
# fail them over), then everything that writes or serves, then the MariaDB clusters.
stop() {
  stop_group "$run/api.pid=control plane API" "$run/worker.pid=control plane worker"
  stop_group "$run/haproxy-mariadb.pid=HAProxy of mariadb" "$run/haproxy-seed000.pid=HAProxy of seed000" \
    "$run/workload.pid=demo workload" "$run/load-mariadb.pid=load writer of mariadb" \
    "$run/load-seed000.pid=load writer of seed000" "$run/report-lock-seed000.pid=report lock on seed000's server 5"
  stop_group "$run/node1/pid=node 1" "$run/node2/pid=node 2" "$run/node3/pid=node 3"
  local name
  for name in mariadb seed000; do
    if [ -f "$run/$name/cluster.json" ]; then
      .venv/bin/python scripts/mariadb_cluster.py stop --dir "$run/$name"
      echo "stopped MariaDB cluster $name"
      # Its data went with it: the ferryd stack's database (which outlives `stop`) forgets it too, so the dashboard
      # does not show a cluster of servers that are gone (the next start registers it afresh).
      if [ -z "${FERRY_STACK_DATABASE_URL:-}" ] && [ -f "$run/control.sqlite3" ]; then
        (export FERRY_DATABASE_URL="sqlite:///$run/control.sqlite3" FERRY_ENVIRONMENT=development \
           FERRY_DEV_SECRET_KEY_FILE="$run/secret.key"; forget_cluster "$name") || true
      fi
    fi
  done
  # The MariaDB stack's own control plane database describes servers whose data just went: it goes too, so the
  # next start does not compare new GTIDs with the old servers' positions.
  rm -f "$run/control-mariadb.sqlite3"
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
  local file=control.sqlite3
  [ "$stack_kind" = mariadb ] && file=control-mariadb.sqlite3
  export FERRY_DATABASE_URL=${FERRY_STACK_DATABASE_URL:-sqlite:///$run/$file}
  unset DATABASE_URL FERRY_NODE_TOKEN
  local sockets=()
  [ "$stack_kind" = mariadb ] && sockets+=("\"$run/haproxy-mariadb.sock\"")
  [ "$seed000" = 1 ] && sockets+=("\"$run/haproxy-seed000.sock\"")
  export FERRY_HAPROXY_ADMIN_SOCKETS="[$(IFS=,; echo "${sockets[*]}")]"
}
cli() { (cd backend && ../.venv/bin/python -m ferry_control.cli "$@"); }

# Migrates the database, then `cli bootstrap`: fresh nodes (no connection anywhere) become node 1 → nodes 2 and 3,
# the replicas read-only (only replication writes to them, so no client can give them errant transactions), while
# a topology changed since (a switchover) is kept; the three are registered as cluster "local" unless it exists.
bootstrap() {
  migrate
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

# The API: started unless running (launch_api), then awaited until it answers (await_api, at most 30 s).
launch_api() {
  alive "$run/api.pid" && return 0
  if curl -fsS "$api/api/v1/health" > /dev/null 2>&1; then
    echo "port $api_port already serves another API (not started from $run): stop it, or set FERRY_API_PORT" >&2
    exit 1
  fi
  # exec: the recorded pid is uvicorn itself, and nothing keeps this script's output open.
  (cd backend && FERRY_ROLE=web exec nohup ../.venv/bin/uvicorn --factory ferry_control.main:create_app \
    --host 127.0.0.1 --port "$api_port") >> "$run/api.log" 2>&1 < /dev/null &
  echo $! > "$run/api.pid"
}

await_api() {
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

# The worker: started unless running (launch_worker), then awaited until it prints "worker ready" (await_worker, at
# most 30 s). Each of the worker and the API spends seconds loading the control plane: start() launches both, then
# starts the MariaDB clusters while they load.
launch_worker() {
  alive "$run/worker.pid" && return 0
  (cd backend && exec nohup ../.venv/bin/python -m ferry_control worker) > "$run/worker.out" 2>> "$run/worker.log" \
    < /dev/null &
  echo $! > "$run/worker.pid"
}

await_worker() {
  for _ in $(seq 1 300); do
    if ! alive "$run/worker.pid"; then
      echo "the worker failed to start; last lines of $run/worker.log:" >&2
      tail -n 20 "$run/worker.log" >&2
      exit 1
    fi
    grep -q '^worker ready' "$run/worker.out" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "the worker did not get ready within 30 s; see $run/worker.log" >&2
  exit 1
}

migrate() {
  if ! alive "$run/api.pid"; then
    cli migrate > "$run/api.log" 2>&1 \
      || { echo "migrating the control plane database failed; see $run/api.log" >&2; exit 1; }
  fi
}

# A MariaDB cluster NAME of SHAPE with N servers from port P (server K on P+K-1) in $run/NAME, unless it runs;
# one left by a start whose servers are gone is cleaned up and started afresh (its data is disposable).
start_mariadb() { # start_mariadb NAME SHAPE N P
  local name=$1 shape=$2 servers=$3 port=$4 dir="$run/$1"
  if [ -f "$dir/cluster.json" ]; then
    if .venv/bin/python scripts/mariadb_cluster.py running --dir "$dir"; then
      echo "MariaDB cluster $name already running"
      return 0
    fi
    .venv/bin/python scripts/mariadb_cluster.py stop --dir "$dir"
  fi
  forget_cluster "$name"
  echo "starting MariaDB cluster $name ($shape, $servers servers from port $port)…"
  .venv/bin/python scripts/mariadb_cluster.py start --dir "$dir" --servers "$servers" --shape "$shape" \
    --base-port "$port" > "$run/$name.log" 2>&1 \
    || { echo "starting MariaDB cluster $name failed; see $run/$name.log" >&2; tail -n 20 "$run/$name.log" >&2; exit 1; }
}

# A MariaDB cluster started afresh has new data: a cluster of that name the control plane's database still holds
# (the ferryd stack's database outlives `stop`) describes the servers that went, so it goes too before registering.
forget_cluster() { # forget_cluster NAME
  (cd backend && ../.venv/bin/python - "$1" <<'PY'
import asyncio, sys
from ferry_control.core.config import get_settings
from ferry_control.core.db import create_engine, create_sessionmaker, session_scope
from ferry_control.repositories.clusters import ClusterRepository

async def forget(name: str) -> None:
    engine = create_engine(get_settings())
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            repository = ClusterRepository(session)
            cluster = await repository.get_by_name(name)
            if cluster is not None:
                await repository.delete(cluster)
                print(f"forgot the previous cluster {name} (id {cluster.id}): its servers' data is gone", file=sys.stderr)
    finally:
        await engine.dispose()

asyncio.run(forget(sys.argv[1]))
PY
  ) || { echo "removing the previous cluster $1 from the control plane's database failed" >&2; exit 1; }
}

# The load writer of cluster NAME (more arguments go to scripts/mariadb_load.py).
start_load() { # start_load NAME [ARGS…]
  local name=$1
  shift
  alive "$run/load-$name.pid" && return 0
  nohup .venv/bin/python scripts/mariadb_load.py --cluster-json "$run/$name/cluster.json" "$@" \
    > "$run/load-$name.log" 2>&1 < /dev/null &
  echo $! > "$run/load-$name.pid"
}

# `cli register`: cluster NAME with the logins of $run/NAME/cluster.json, discovered from its server SEED; sets
# the variable named by OUT to its id.
register_mariadb() { # register_mariadb NAME SEED OUT
  local name=$1 seed=$2 out=$3 id
  id=$(
    # The logins from cluster.json into this subshell's environment (passwords never on a command line).
    eval "$(.venv/bin/python - "$run/$name/cluster.json" "$seed" <<'PY'
import json, shlex, sys
c = json.load(open(sys.argv[1]))
u = c["users"]
for var, value in (("FERRY_DB_PASSWORD", u["admin"]["password"]), ("FERRY_REPLICATION_PASSWORD", u["replication"]["password"]),
                   ("db_user", u["admin"]["user"]), ("replication_user", u["replication"]["user"]),
                   ("seed_address", c["servers"][int(sys.argv[2]) - 1]["address"]), ("shape", c["shape"])):
    print(f"{var}={shlex.quote(value)}")
print("export FERRY_DB_PASSWORD FERRY_REPLICATION_PASSWORD")
PY
)"
    cli register --cluster "$name" --seed "$seed_address" --db-user "$db_user" \
      --replication-user "$replication_user" --description "MariaDB demo ($shape)" --wait-s 60
  ) || { echo "registering MariaDB cluster $name failed (see above)" >&2; exit 1; }
  printf -v "$out" '%s' "$id"
}

# SQL as root on server K of cluster NAME, over its unix socket (its cluster.json names it).
server_sql() { # server_sql NAME K SQL
  local socket
  socket=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["servers"][int(sys.argv[2]) - 1]["socket"])' \
    "$run/$1/cluster.json" "$2")
  mariadb --no-defaults --socket="$socket" --user=root -e "$3"
}

# Server K of cluster NAME applies what it receives SECONDS late (MASTER_DELAY on its default connection).
delay_replica() { # delay_replica NAME K SECONDS
  server_sql "$1" "$2" "STOP SLAVE ''; CHANGE MASTER '' TO MASTER_DELAY = $3; START SLAVE ''" \
    || { echo "making server $2 of $1 a delayed replica failed" >&2; exit 1; }
}

# Server K of cluster NAME applies in parallel: WORKERS threads, at most half of them for one domain, so a domain
# whose apply waits (a lock) leaves workers for the others (MariaDB's out-of-order parallel apply across domains).
parallel_replica() { # parallel_replica NAME K WORKERS
  server_sql "$1" "$2" "STOP SLAVE ''; SET GLOBAL slave_parallel_threads = $3;
    SET GLOBAL slave_domain_parallel_threads = $(($3 / 2)); SET GLOBAL slave_parallel_mode = 'optimistic';
    START SLAVE ''" || { echo "making server $2 of $1 a parallel-applying replica failed" >&2; exit 1; }
}

# A demo "report" on server K of cluster NAME: a read lock on domain 1's table for SECONDS of every 20 s.
start_report_lock() { # start_report_lock NAME K SECONDS
  alive "$run/report-lock-$1.pid" && return 0
  nohup .venv/bin/python scripts/mariadb_report_lock.py --cluster-json "$run/$1/cluster.json" --server "$2" \
    --domain 1 --hold-s "$3" --period-s 20 > "$run/report-lock-$1.log" 2>&1 < /dev/null &
  echo $! > "$run/report-lock-$1.pid"
}

start_mariadb_clusters() {
  mariadb_ids=()
  if [ "$stack_kind" = mariadb ]; then
    start_mariadb mariadb star 3 $((mariadb_base + 11))
    register_mariadb mariadb 1 cluster_id
    mariadb_ids+=("mariadb=$cluster_id")
  fi
  if [ "$seed000" = 1 ]; then
    local seed_id
    start_mariadb seed000 seed000 5 $((mariadb_base + 21))
    start_load seed000 --rate-min 4 --rate-max 30 --period-s 45
    if [ "$delay_s" -gt 0 ]; then
      delay_replica seed000 4 "$delay_s"
    fi
    if [ "$lock_s" != 0 ]; then
      parallel_replica seed000 5 4
      start_report_lock seed000 5 "$lock_s"
    fi
    register_mariadb seed000 3 seed_id
    mariadb_ids+=("seed000=$seed_id")
  fi
}

# A HAProxy in front of MariaDB cluster NAME (id ID) on WRITER and READER ports: its configuration rendered by the
# API, its checks' viewer token in its environment only, started as a daemon with a pid file (stopped by pid).
start_proxy() { # start_proxy NAME ID WRITER READER
  local name=$1 id=$2 cfg="$run/haproxy-$1.cfg" check_token
  alive "$run/haproxy-$name.pid" && return 0
  curl -fsS -H "Authorization: Bearer $api_token" -o "$cfg" \
    "$api/api/v1/clusters/$id/haproxy-config?writer_bind=127.0.0.1:$3&reader_bind=127.0.0.1:$4&admin_socket=$run/haproxy-$name.sock&ferry_address=127.0.0.1:$api_port&check_interval_ms=$check_interval_ms" \
    || { echo "rendering the HAProxy configuration of $name failed" >&2; exit 1; }
  # Its checks' viewer token, made through the API with the stack's admin token (a CLI would load the control plane).
  check_token=$(curl -fsS -H "Authorization: Bearer $api_token" -H "Content-Type: application/json" \
    -d "{\"name\": \"haproxy-$name-$(date +%Y%m%d-%H%M%S)-$$\", \"role\": \"viewer\"}" "$api/api/v1/tokens" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])') \
    || { echo "creating the viewer token of $name's HAProxy checks failed" >&2; exit 1; }
  FERRY_CHECK_TOKEN=$check_token "$haproxy" -f "$cfg" -D -p "$run/haproxy-$name.pid" >> "$run/haproxy-$name.log" 2>&1 \
    || { echo "HAProxy for $name did not start; see $run/haproxy-$name.log" >&2; exit 1; }
}

start_proxies() {
  haproxy=$(scripts/ensure-haproxy.sh)
  local item name id
  for item in "${mariadb_ids[@]}"; do
    name=${item%%=*} id=${item#*=}
    case "$name" in
      mariadb)
        start_proxy mariadb "$id" $((mariadb_base + 41)) $((mariadb_base + 42))
        # The demo writer as an application would: one address, HAProxy's writer port.
        start_load mariadb --through "127.0.0.1:$((mariadb_base + 41))" --domains 1,2,3 --rate-min 5 \
          --rate-max 40 --period-s 60 ;;
      seed000) start_proxy seed000 "$id" $((mariadb_base + 43)) $((mariadb_base + 44)) ;;
    esac
  done
}

# An admin API token for this start (stack.json's), made in the background (the CLI loads the control plane too):
# launch_api_token, then await_api_token.
launch_api_token() {
  (umask 077 && cli create-token --name "admin-$(date +%Y%m%d-%H%M%S)-$$" --role admin > "$run/api-token.new") &
  token_pid=$!
}

await_api_token() {
  wait "$token_pid" || { echo "creating the stack's admin API token failed (see above)" >&2; exit 1; }
  api_token=$(cat "$run/api-token.new")
  rm -f "$run/api-token.new"
}

write_stack_json() {
  local name=local nodes=1
  [ "$stack_kind" = mariadb ] && { name=mariadb; nodes=0; }
  API="$api" API_TOKEN="$api_token" CLUSTER_ID="$cluster_id" CLUSTER_NAME="$name" NODES="$nodes" \
    NODE_TOKEN="$(cat "$token_file")" BASE="$base" RUN="$run" MARIADB="${mariadb_ids[*]}" python3 -c '
import json, os
base = int(os.environ["BASE"])
def report_lock(name):  # the pid file of the demo report on that cluster, when it has one
    path = os.path.join(os.environ["RUN"], f"report-lock-{name}.pid")
    return path if os.path.exists(path) else None
print(json.dumps({
    "api": os.environ["API"],
    "admin_token": os.environ["API_TOKEN"],
    "cluster_id": int(os.environ["CLUSTER_ID"]),
    "cluster_name": os.environ["CLUSTER_NAME"],
    "node_token": os.environ["NODE_TOKEN"],
    "worker_pid_file": os.path.join(os.environ["RUN"], "worker.pid"),
    "nodes": [{"name": f"node{i}", "protocol": f"127.0.0.1:{base + i}", "admin": f"http://127.0.0.1:{base + 100 + i}"}
              for i in (1, 2, 3)] if os.environ["NODES"] == "1" else [],
    "mariadb_clusters": [
        {"name": name, "id": int(id_), "dir": os.path.join(os.environ["RUN"], name),
         "cluster_json": os.path.join(os.environ["RUN"], name, "cluster.json"),
         "report_lock_pid_file": report_lock(name)}
        for name, id_ in (item.split("=") for item in os.environ["MARIADB"].split())
    ],
}, indent=2))' > "$run/stack.json"
  chmod 600 "$run/stack.json"
}

start() {
  if [ "$stack_kind" = ferryd ]; then
    for exe in ferryd ferry-bench; do
      [ -x "$bin/$exe" ] || { echo "$bin/$exe is missing: build the engine first (make up does)" >&2; exit 1; }
    done
  fi
  mkdir -p "$run"
  if [ ! -s "$token_file" ]; then
    python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > "$token_file"
    chmod 600 "$token_file"
  fi
  control_plane_env
  if [ "$stack_kind" = ferryd ]; then
    start_nodes
    bootstrap
    start_workload
  else
    migrate
  fi
  launch_worker
  launch_api
  launch_api_token
  start_mariadb_clusters
  await_api
  await_worker
  await_api_token
  start_proxies
  write_stack_json
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
