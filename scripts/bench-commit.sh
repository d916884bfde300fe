#!/usr/bin/env bash
# The commit benchmark matrix of docs/benchmarks.md: the disk's raw fsync latency, then commits/s for
# 1, 8, 32 and 64 clients in each commit mode with durability `local`, and group commit with durability `none`
# as the ceiling. Each run starts a fresh ferryd on an empty data directory. TRIALS (default 3) repeats the whole
# matrix, interleaved so that a noisy moment of a shared machine hits every mode alike; the summary gives each
# configuration's median. Each run also gives the node's CPU time over it (utime + stime of the ferryd process from
# /proc/<pid>/stat) as commits per CPU-second, and the 1-minute load average when it ended.
# Prints one JSON object per run and, last, one JSON object with every figure.
# CLIENTS picks the client counts (default "1 8 32 64"), CONFIGS the mode:durability pairs (default every one).
# BASELINE_FERRYD=<path to another ferryd build> runs every configuration with it too, right after the build of
# this tree (same conditions, interleaved): runs say "build": "current" or "baseline", medians are per build.
# Usage: scripts/bench-commit.sh [seconds-per-run] (default 8).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-8}
clients_list=${CLIENTS:-"1 8 32 64"}
trials=${TRIALS:-3}
configs=${CONFIGS:-"group:local per-txn-fsync:local naive-scheduling:local group:none"}
cargo build --release --locked --manifest-path "$root/engine/Cargo.toml" -p ferryd -p ferry-bench >&2
bin="$root/engine/target/release"
work=$(mktemp -d "$root/.bench.XXXXXX")
# The node of the run under way, stopped by its pid if the script ends early.
pid=""
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; [ -n "$pid" ] && wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT

fsync=$("$bin/ferry-bench" fsync --dir "$work" --count 3000 | tail -n 1)
echo "fsync $fsync" >&2
builds="current:$bin/ferryd"
[ -n "${BASELINE_FERRYD:-}" ] && builds="$builds baseline:$BASELINE_FERRYD"
runs=()
for trial in $(seq 1 "$trials"); do
for config in $configs; do
  mode=${config%%:*} durability=${config##*:}
  for clients in $clients_list; do
  for build in $builds; do
    name=${build%%:*} ferryd=${build#*:}
    dir="$work/$mode-$durability-$clients"
    "$ferryd" --server-id 1 --data-dir "$dir" --listen 127.0.0.1:0 --admin 127.0.0.1:0 \
      --commit-mode "$mode" --durability "$durability" > "$work/ready" 2> "$work/ferryd.log" &
    pid=$!
    for _ in $(seq 1 100); do [ -s "$work/ready" ] && break; sleep 0.05; done
    addr=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listen"])' "$work/ready")
    result=$("$bin/ferry-bench" commit --addr "$addr" --clients "$clients" --seconds "$seconds" --node-pid "$pid" | tail -n 1)
    load=$(cut -d' ' -f1 /proc/loadavg)
    kill -TERM "$pid"; wait "$pid" || true
    pid=""
    rm -f "$work/ready"; rm -rf "$dir"
    run=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(mode=sys.argv[2], durability=sys.argv[3], trial=int(sys.argv[4]), load_avg_1m=float(sys.argv[5]), build=sys.argv[6]); print(json.dumps(r))' "$result" "$mode" "$durability" "$trial" "$load" "$name")
    echo "$run"
    runs+=("$run")
  done
  done
done
done
python3 - "$fsync" "${runs[@]}" <<'PY'
import json, platform, os, statistics, sys
fsync = json.loads(sys.argv[1])
runs = [json.loads(r) for r in sys.argv[2:]]
def medians(figure):
    by_config = {}
    for r in runs:
        if r.get(figure) is not None:
            key = f"{r['mode']}/{r['durability']}/{r['clients']}"
            if len({x["build"] for x in runs}) > 1:
                key = f"{r['build']}/{key}"
            by_config.setdefault(key, []).append(r[figure])
    return {k: statistics.median(v) for k, v in by_config.items()}
print(json.dumps({"machine": {"cpus": os.cpu_count(), "kernel": platform.release()}, "fsync": fsync,
                  "median_commits_per_s": medians("commits_per_s"),
                  "median_commits_per_node_cpu_s": medians("commits_per_node_cpu_s"), "runs": runs}))
PY
