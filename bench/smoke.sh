#!/usr/bin/env bash
# make test's smoke run of the benchmarks (issue 24): each binary once, on the
# smallest input it takes, so none can rot unseen. Its figures mean nothing
# and are not read; docs/performance.md has the real runs.
# Usage: bench/smoke.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build}/bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
  local t0=$SECONDS
  if ! "$@" >"$work/out" 2>&1; then
    tail -n 40 "$work/out" >&2
    echo "bench smoke: $(basename "$1") failed: $*" >&2
    exit 1
  fi
  echo "bench smoke: $(basename "$1") ok ($((SECONDS - t0)) s)"
}
python3 bench/gen_tree.py "$work/tree" --jobs 1 --checkpoints 2 --ranks 4 --shard-bytes 4096 >/dev/null
printf 'global: {state_dir: %s, scan_interval: 1s}\ntiers:\n  - {name: rapid, path: %s, role: rapid}\n' \
  "$work/state" "$work/tree" >"$work/c.yml"
run "$b/scan_bench" "$work/tree" 1
run "$b/scrape_bench" "$work/c.yml" 0.2 1 2 5 5
run "$b/tail_bench" 1
run bench/prom_parse_bench.sh "${1:-build}" 0.5
run "$b/event_parse_bench" --benchmark_filter='^BM_EventParserChunks/65536$'
run "$b/publish_bench" --benchmark_min_time=0.01 --benchmark_filter='/10000$|^BM_GpuPoll'
run "$b/rules_bench" --benchmark_min_time=0.01 --benchmark_filter='/10/25$'
