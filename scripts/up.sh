#!/usr/bin/env bash
# `make up`: builds what is missing (the engine in release, the dashboard, the control plane's venv with
# ferry_engine), then starts the local stack with scripts/stack.sh: three ferryd nodes on loopback (node 1 the
# master, nodes 2 and 3 replicating from it), the demo workload, and the API on an embedded SQLite
# (.run/control.sqlite3) serving the dashboard, the nodes registered as cluster "local". Prints the URL and a
# fresh admin token. State lives in .run/; `make down` stops it all. FERRY_API_PORT (default 8000) moves the API.
#
# Beside the ferryd nodes, the two-master shape on real MariaDB 10.11 as the cluster "seed000" (Debian's mariadb-server,
# installed when absent by scripts/ensure-mariadb.sh; SQL ports 3321-3325): masters 1 and 2 writing in domains 1 and
# 2, server 3 a multi-source replica of both, servers 4 and 5 replicas of it, server 4 delayed by
# FERRY_MARIADB_DELAY_S (30 s) so lag in seconds shows, server 5 applying in parallel while a demo "report" holds
# domain 1's table there for FERRY_MARIADB_REPORT_LOCK_S (8 s) of every 20 s, so that domain's lag climbs and
# drains while domain 2 keeps applying, with a load writer at a varying rate; registered with its
# logins and discovered from server 3, its servers then registered under the names printed, s1-s5
# (scripts/name_servers.py). FERRY_MARIADB_SEED000=0 leaves it out (and MariaDB is then not needed).
#
# FERRY_STACK=mariadb: MariaDB instead of ferryd (Debian's mariadb-server, installed when absent by
# scripts/ensure-mariadb.sh): the three-server cluster "mariadb" (server 1 the master, 2 and 3 read-only replicas,
# SQL ports 3311-3313) and the two-master cluster "seed000" (ports 3321-3325; FERRY_MARIADB_SEED000=0 leaves it out;
# its server 4 a replica delayed by FERRY_MARIADB_DELAY_S, 30 s, so lag shows), each with a load writer at a varying
# rate, registered with their logins and discovered (scripts/stack.sh). The
# control plane's database is then .run/control-mariadb.sqlite3, so the two stacks' clusters stay apart.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
stack_kind=${FERRY_STACK:-ferryd}

if [ "$stack_kind" = ferryd ]; then
  export FERRY_MARIADB_SEED000=${FERRY_MARIADB_SEED000:-1} FERRY_MARIADB_DELAY_S=${FERRY_MARIADB_DELAY_S:-30} \
    FERRY_MARIADB_REPORT_LOCK_S=${FERRY_MARIADB_REPORT_LOCK_S:-8}
fi
if [ "$stack_kind" = mariadb ] || [ "${FERRY_MARIADB_SEED000:-}" = 1 ]; then
  scripts/ensure-mariadb.sh > /dev/null
fi
if [ "$stack_kind" != mariadb ]; then
  scripts/ensure-rust.sh
  echo "building the engine (release)…"
  cargo build --release --locked --manifest-path engine/Cargo.toml -p ferryd -p ferry-bench
fi

# The dashboard (the API serves frontend/dist from its own origin).
scripts/ensure-dashboard.sh

# The control plane: the backend venv (pinned requirements) and ferry_engine built into it.
scripts/ensure-backend.sh
if ! .venv/bin/python -c 'import ferry_engine' 2>/dev/null; then
  make -s python-module
fi

export FERRY_RUN_DIR="$root/.run" FERRY_BIN_DIR="$root/engine/target/release"
unset FERRY_PORT_BASE FERRY_STACK_DATABASE_URL
scripts/stack.sh start
# Discovery named the MariaDB servers by their addresses: registered under the names printed below (s1, s2, …), so
# `ferryctl failover seed000 --from s1 --wait` finds what this prints.
.venv/bin/python scripts/name_servers.py .run/stack.json
eval "$(python3 -c '
import json, shlex
s = json.load(open(".run/stack.json"))
for key in ("api", "admin_token", "cluster_id", "node_token"):
    print(f"{key}={shlex.quote(str(s[key]))}")')"

if [ "$stack_kind" = mariadb ]; then
  clusters=$(python3 - <<'PY'
import json
s = json.load(open(".run/stack.json"))
for c in s["mariadb_clusters"]:
    state = json.load(open(c["cluster_json"]))
    servers = ", ".join(f"s{x['number']} {x['address']}" for x in state["servers"])
    print(f"  cluster {c['name']!r} (id {c['id']}, {state['shape']}): {servers}")
    print(f"    logins and sockets: {c['cluster_json']}   load writer log: .run/load-{c['name']}.log")
    ports = {"mariadb": (41, 42), "seed000": (43, 44)}.get(c["name"])
    if ports:
        base = int(state["servers"][0]["address"].rsplit(":", 1)[1]) - (11 if c["name"] == "mariadb" else 21)
        print(f"    through HAProxy: writer 127.0.0.1:{base + ports[0]}, reader 127.0.0.1:{base + ports[1]}"
              f"   (config .run/haproxy-{c['name']}.cfg)")
PY
)
  cat <<EOT

Ferry is up, managing MariaDB.
$clusters
  e.g. mariadb --socket=.run/mariadb/s1/mariadbd.sock -u root -e 'SELECT @@gtid_binlog_pos'
  dashboard          $api/   (sign in with the API admin token below)
  control plane API  $api/docs   (logs: .run/api.log, its worker .run/worker.log)
  API admin token    $admin_token
    e.g. curl -H "Authorization: Bearer $admin_token" $api/api/v1/clusters/$cluster_id/topology
  logs and data: .run/   stop everything: make down
EOT
  exit 0
fi

cat <<EOT

Ferry is up.
  node 1  protocol 127.0.0.1:7301  admin http://127.0.0.1:7401/v1/status  (the master at start)
  node 2  protocol 127.0.0.1:7302  admin http://127.0.0.1:7402/v1/status
  node 3  protocol 127.0.0.1:7303  admin http://127.0.0.1:7403/v1/status
  demo workload: 20 transactions/s in domains 1-3, written to whichever node is the master
  metrics http://127.0.0.1:740N/metrics   recent transactions http://127.0.0.1:740N/v1/binlog/events
  node admin token (every node admin call but /v1/health): $node_token
  dashboard          $api/   (sign in with the API admin token below)
  control plane API  $api/docs   (cluster "local" is id $cluster_id; logs: .run/api.log, its worker .run/worker.log)
  API admin token    $admin_token
    e.g. curl -H "Authorization: Bearer $admin_token" $api/api/v1/clusters/$cluster_id/topology
  inspect a binlog: engine/target/release/ferry-binlog .run/node1/data/binlog
EOT
python3 - <<'PY'
import json
s = json.load(open(".run/stack.json"))
for c in s["mariadb_clusters"]:
    state = json.load(open(c["cluster_json"]))
    servers = ", ".join(f"s{x['number']} {x['address']}" for x in state["servers"])
    print(f"  cluster {c['name']!r} (id {c['id']}, MariaDB, {state['shape']}): {servers}")
    print("    masters s1 and s2 (domains 1 and 2), s3 a multi-source replica of both, s4 (delayed) and s5 below s3")
    print("    s5 applies in parallel; a demo report locks domain 1's table there 8 s of every 20 s (.run/report-lock-seed000.log)")
    print(f"    dashboard {s['api']}/clusters/{c['id']}/interleavings   lag: {s['api']}/clusters/{c['id']}/lag")
    print(f"    logins and sockets: {c['cluster_json']}   load writer log: .run/load-{c['name']}.log")
    ports = {"mariadb": (41, 42), "seed000": (43, 44)}.get(c["name"])
    if ports:
        base = int(state["servers"][0]["address"].rsplit(":", 1)[1]) - (11 if c["name"] == "mariadb" else 21)
        print(f"    through HAProxy: writer 127.0.0.1:{base + ports[0]}, reader 127.0.0.1:{base + ports[1]}"
              f"   (config .run/haproxy-{c['name']}.cfg)")
PY
echo "  logs and data: .run/   stop everything: make down"
