#!/usr/bin/env bash
# Peak memory of the daemon watching ~1,000,000 shard files (issue 3 target:
# <= 150 MB). Generates the tree once (20 jobs x 25 checkpoints x 1024 ranks
# x 2 files, sparse), runs `ckptmon serve` on it until two walks finished,
# and prints VmHWM/VmRSS next to GNU find's peak on the same tree.
# Usage: bench/memory_bench.sh [TREE] [BUILD]
set -euo pipefail
tree=${1:-/tmp/ckptmon-bench-1m}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../$build/ckptmon"
if [ ! -d "$tree/job-19" ]; then
  python3 "$here/gen_tree.py" "$tree" --jobs 20
fi
files=$(find "$tree" -type f | wc -l)
work=$(mktemp -d)
pid=""
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/c.yml" <<YML
global: {state_dir: $work/state, scan_interval: 2s, scan_timeout: 10m}
tiers:
  - {name: big, path: $tree, role: rapid}
YML
. "$here/serve_lib.sh"
start_serve "$bin" "$work/c.yml" "$work/log"
# Wait for the full walk to have catalogued every checkpoint.
start=$(date +%s)
while :; do
  c=$(curl -s "127.0.0.1:$port/metrics" | awk '/^ckpt_checkpoints\{.*state="committed"/ {s+=$2} END {print s+0}')
  [ "$c" -ge 500 ] && break
  [ $(( $(date +%s) - start )) -gt 600 ] && { echo "timed out waiting for the catalog"; exit 1; }
  sleep 1
done
sleep 5  # let a steady-state walk or two run
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
find_peak=$( { /usr/bin/time -f '%M' find "$tree" -printf '%s %T@\n' >/dev/null; } 2>&1 | tail -1)
printf '%-40s %12s\n' "what" "peak KiB"
printf '%-40s %12s\n' "shard files in the tree" "$files"
printf '%-40s %12s\n' "ckptmon serve VmHWM (peak RSS)" "$hwm"
printf '%-40s %12s\n' "ckptmon serve VmRSS after 2+ walks" "$rss"
printf '%-40s %12s\n' "find -printf peak RSS (context)" "$find_peak"
