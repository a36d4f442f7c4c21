#!/usr/bin/env bash
# Regenerates docs/example-report.md: runs `ckptmon demo` (the workload of
# `make demo`) for a few minutes at --speed 4, keeps its directory, and
# writes the markdown report of its state database. The demo lives minutes,
# not days, so the growth rates are fitted over at least a minute
# (--min-history 1m) instead of the default hour.
# Usage: scripts/example-report.sh [BUILD_DIR] [OUTPUT]   (defaults: build, docs/example-report.md)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}/ckptmon"
out="${2:-docs/example-report.md}"
run_for="${CKPTMON_EXAMPLE_RUN_FOR:-3m}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
TMPDIR="$work" "$bin" demo --speed 4 --exit-after "$run_for" --keep \
  --web.listen-address 127.0.0.1:0 >"$work/demo.log" 2>&1
demo="$(ls -d "$work"/ckptmon-demo-*)"
"$bin" report --state-dir "$demo/state" --config.file "$demo/ckptmon.yml" --since 1h \
  --min-history 1m --format markdown >"$work/report.md"
# The temporary directory's name changes every run; the report names it.
sed "s|$demo|\$DEMO|g" "$work/report.md" >"$out"
echo "wrote $out"
