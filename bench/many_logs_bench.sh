#!/usr/bin/env bash
# Event logs past the descriptor limit (issue 27, item 7): N per-rank logs
# (default 21,000) under a descriptor limit below N (default 20,000). Before
# the descriptor budget, every matched log held a descriptor for good and the
# server could no longer accept. Prints whether /metrics and /-/healthy answer,
# how many lines were read, and the open and unread log gauges.
# Usage: [LOGS=21000] [NOFILE=20000] bench/many_logs_bench.sh [WORK_DIR] [BUILD]
set -euo pipefail
work=${1:-/tmp/ckptmon-manylogs}
build=${2:-build}
logs=${LOGS:-21000}
nofile=${NOFILE:-20000}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../$build/ckptmon"
. "$here/serve_lib.sh"
rm -rf "$work" && mkdir -p "$work/tier" "$work/logs" "$work/state"
python3 - "$work/logs" "$logs" <<'PY'
import json, os, sys
d, n = sys.argv[1], int(sys.argv[2])
for r in range(n):
    with open(os.path.join(d, f"events-rank{r:05d}.jsonl"), "w") as f:
        f.write(json.dumps({"v": 1, "ts": 1714564800, "event": "checkpoint_start",
                            "job": "llama", "step": 100, "rank": r}) + "\n")
PY
cat >"$work/ckptmon.yml" <<YML
global:
  state_dir: $work/state
  scan_interval: 1h
  tail_interval: 200ms
tiers:
  - {name: rapid, path: $work/tier, role: rapid}
manifests:
  - {glob: "$work/logs/*.jsonl", tier: rapid}
integrity: {enabled: false}
YML
ulimit -n "$nofile"
start_serve "$bin" "$work/ckptmon.yml" "$work/serve.log"
trap 'kill $pid 2>/dev/null || true' EXIT
wait_ready 120
t0=$(date +%s.%N)
for _ in $(seq 600); do
  got=$(curl -s "127.0.0.1:$port/metrics" | awk '/^ckptmon_manifest_lines_total/ {s += $2} END {printf "%d", s}')
  [ "$got" -ge "$logs" ] && break
  sleep 0.5
done
t1=$(date +%s.%N)
ok=0
for _ in $(seq 100); do
  curl -sf -o /dev/null "127.0.0.1:$port/metrics" && curl -sf -o /dev/null "127.0.0.1:$port/-/healthy" && ok=$((ok + 1))
done
curl -s "127.0.0.1:$port/metrics" >"$work/metrics.txt"
echo "$logs logs, RLIMIT_NOFILE $nofile"
echo "lines read: $got of $logs in $(echo "$t1 - $t0" | bc) s after ready"
echo "scrape + healthy pairs answered: $ok of 100"
grep -E '^ckptmon_manifest_(open|unread)_files|^ckptmon_manifest_files ' "$work/metrics.txt" || true
echo "open descriptors now: $(ls /proc/$pid/fd | wc -l)"
echo "accept failures logged: $(grep -c 'accept failed' "$work/serve.log" || true)"
