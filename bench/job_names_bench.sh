#!/usr/bin/env bash
# Hostile job names (issue 27, item 6): one event log naming N distinct jobs
# (default 100,000, about 10 MB), plus events naming a tier that is not
# configured. Runs `ckptmon serve` until the log is read, then prints the
# series count, the exposition's size and the daemon's peak RSS, so the cap
# (`global.max_jobs_per_tier`, 1,000 by default) can be compared with what an
# uncapped daemon costs: pass CAP=1000000 for the uncapped peer in the same run.
# Usage: [JOBS=100000] [CAP=1000] bench/job_names_bench.sh [WORK_DIR] [BUILD]
set -euo pipefail
work=${1:-/tmp/ckptmon-jobnames}
build=${2:-build}
jobs=${JOBS:-100000}
cap=${CAP:-1000}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../$build/ckptmon"
. "$here/serve_lib.sh"
rm -rf "$work" && mkdir -p "$work/tier" "$work/logs" "$work/state"
python3 - "$work/logs/events.jsonl" "$jobs" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for i in range(n):
        for ev in ({"event": "checkpoint_start", "step": 100},
                   {"event": "checkpoint_commit", "step": 100, "files": 2, "bytes": 4096}):
            f.write(json.dumps({"v": 1, "ts": 1714564800 + i, "job": f"job-{i:06d}", **ev}) + "\n")
    for i in range(1000):
        f.write(json.dumps({"v": 1, "ts": 1714564800, "event": "checkpoint_start",
                            "job": "x", "step": 1, "tier": f"not-a-tier-{i}"}) + "\n")
PY
cat >"$work/ckptmon.yml" <<YML
global:
  state_dir: $work/state
  scan_interval: 1h
  tail_interval: 200ms
  max_jobs_per_tier: $cap
tiers:
  - {name: rapid, path: $work/tier, role: rapid}
manifests:
  - {glob: "$work/logs/*.jsonl", tier: rapid}
integrity: {enabled: false}
YML
echo "log: $(stat -c %s "$work/logs/events.jsonl") bytes, $jobs job names, cap $cap"
start_serve "$bin" "$work/ckptmon.yml" "$work/serve.log"
trap 'kill $pid 2>/dev/null || true' EXIT
wait_ready 120
# Read until every line is counted (ok or refused).
want=$((jobs * 2 + 1000))
for _ in $(seq 600); do
  got=$(curl -s "127.0.0.1:$port/metrics" | awk '/^ckptmon_manifest_lines_total/ {s += $2} END {printf "%d", s}')
  [ "$got" -ge "$want" ] && break
  sleep 0.5
done
sleep 2  # one more publish after the last batch
curl -s "127.0.0.1:$port/metrics" >"$work/metrics.txt"
echo "lines counted: $got of $want"
echo "series: $(grep -vc '^#' "$work/metrics.txt")"
echo "exposition: $(stat -c %s "$work/metrics.txt") bytes"
echo "training_job values: $(grep -o 'training_job="[^"]*"' "$work/metrics.txt" | sort -u | wc -l)"
grep -E '^ckptmon_manifest_errors_total\{.*(too_many_jobs|unconfigured_tier)' "$work/metrics.txt" || true
grep -E 'VmHWM|VmRSS' /proc/$pid/status
echo "log lines naming the cap: $(grep -c 'max_jobs_per_tier' "$work/serve.log" || true)"
