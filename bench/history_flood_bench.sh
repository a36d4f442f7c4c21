#!/usr/bin/env bash
# History queries against ingestion (issue 27, item 9). Fills the state
# database with 2,000,000 per-job samples of the last day (200 jobs x 10,000
# times), then measures event-ingestion latency (an event line appended ->
# counted in /metrics) 40 times with no queries, and 40 times while 8 clients
# loop `GET /api/v1/history?since=1d&series=stored_bytes&step=60`. Before the
# query threads, the flood raised the latency from 0.06 s to 33-60 s (the
# issue's run). Prints both distributions and the query answers' status codes.
# Usage: bench/history_flood_bench.sh [WORK_DIR] [BUILD]
set -euo pipefail
work=${1:-/tmp/ckptmon-histflood}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../$build/ckptmon"
. "$here/serve_lib.sh"
rm -rf "$work" && mkdir -p "$work/tier" "$work/logs" "$work/state"
: >"$work/logs/events.jsonl"
cat >"$work/ckptmon.yml" <<YML
global:
  state_dir: $work/state
  scan_interval: 1h
  tail_interval: 50ms
tiers:
  - {name: rapid, path: $work/tier, role: rapid}
manifests:
  - {glob: "$work/logs/*.jsonl", tier: rapid}
integrity: {enabled: false}
YML
# Once to create the schema, then the samples straight into SQLite.
start_serve "$bin" "$work/ckptmon.yml" "$work/serve0.log"
wait_ready 60
kill "$pid"; wait "$pid" || true
now=$(date +%s)
sqlite3 "$work/state/ckptmon.db" <<SQL
WITH RECURSIVE t(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM t WHERE i < 9999),
               j(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM j WHERE k < 199)
INSERT OR REPLACE INTO tier_job_samples(tier, t, job, stored_bytes)
SELECT 'rapid', $now - 86000 + i * 8.6, printf('job-%03d', k), i * 1000.0 FROM t, j;
SQL
echo "samples: $(sqlite3 "$work/state/ckptmon.db" 'SELECT count(*) FROM tier_job_samples')"
start_serve "$bin" "$work/ckptmon.yml" "$work/serve.log"
trap 'kill $pid 2>/dev/null || true' EXIT
wait_ready 120

lines() { curl -s "127.0.0.1:$port/metrics" | awk '/^ckptmon_manifest_lines_total/ {s += $2} END {printf "%d", s}'; }
n=0
measure() {  # prints 40 latencies in seconds, sorted
  for _ in $(seq 40); do
    n=$((n + 1))
    t0=$(date +%s.%N)
    printf '{"v":1,"ts":%s,"event":"checkpoint_start","job":"probe","step":%d}\n' "$(date +%s)" "$n" >>"$work/logs/events.jsonl"
    until [ "$(lines)" -ge "$n" ]; do sleep 0.02; done
    echo "$(date +%s.%N) - $t0" | bc
    sleep 0.2
  done | sort -n | awk '{a[NR] = $1} END {printf "median %.3f s, p90 %.3f s, max %.3f s\n", a[int(NR / 2)], a[int(NR * 0.9)], a[NR]}'
}
echo "ingestion latency, no queries: $(measure)"
: >"$work/codes"
clients=()
for c in $(seq 8); do
  (while :; do curl -s -o /dev/null -w '%{http_code}\n' --max-time 30 \
     "127.0.0.1:$port/api/v1/history?since=1d&series=stored_bytes&step=60" >>"$work/codes"; done) &
  clients+=($!)
done
sleep 2
echo "ingestion latency, 8 history clients: $(measure)"
kill "${clients[@]}" 2>/dev/null || true
wait "${clients[@]}" 2>/dev/null || true
echo "history answers by status: $(sort "$work/codes" | uniq -c | tr '\n' ' ')"
curl -s "127.0.0.1:$port/metrics" | grep -E '^ckptmon_history_queries_refused_total' || true
