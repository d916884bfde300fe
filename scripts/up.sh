#!/usr/bin/env bash
# Starts the local Ferry stack without Docker: three ferryd nodes on loopback and a demo workload writing in
# three domains on node 1. State lives in .run/ (data, logs, pids, admin token); `make down` stops it all.
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

if ! alive "$run/workload.pid"; then
  nohup "$bin/ferry-bench" demo --addr 127.0.0.1:7301 --rate 20 --domains 3 \
    > "$run/workload.log" 2>&1 < /dev/null &
  echo $! > "$run/workload.pid"
fi

cat <<EOT

Ferry is up.
  node 1  protocol 127.0.0.1:7301  admin http://127.0.0.1:7401/v1/status  (demo workload writes here, domains 1-3)
  node 2  protocol 127.0.0.1:7302  admin http://127.0.0.1:7402/v1/status
  node 3  protocol 127.0.0.1:7303  admin http://127.0.0.1:7403/v1/status
  metrics http://127.0.0.1:740N/metrics   recent transactions http://127.0.0.1:740N/v1/binlog/events
  admin token (for mutating admin calls): $(cat "$token_file")
  inspect a binlog: engine/target/release/ferry-binlog .run/node1/data/binlog
  logs and data: .run/   stop everything: make down
EOT
