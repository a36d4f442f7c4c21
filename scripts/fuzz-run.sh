#!/usr/bin/env bash
# Fuzzes each libFuzzer target for SECONDS (make fuzz-test, make fuzz), JOBS
# targets at a time (each fuzzer is one process on one core). New inputs go to
# BUILD/corpus/<target>, never into the source tree; the seeds are
# fuzz/corpus/<target>. A crash leaves its input in BUILD/crash-<target>-*:
# make it a unit test with the fix.
# Usage: scripts/fuzz-run.sh BUILD SECONDS JOBS TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 seconds=$2 jobs=$3
shift 3
one() {
  local t=$1 dict=
  mkdir -p "$build/corpus/$t"
  if [ -f "fuzz/$t.dict" ]; then dict=-dict=fuzz/$t.dict; fi
  if ! "$build/fuzz/${t}_fuzz" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
      -print_final_stats=1 $dict -artifact_prefix="$build/crash-$t-" \
      "$build/corpus/$t" "fuzz/corpus/$t" >"$build/fuzz-$t.log" 2>&1; then
    tail -n 60 "$build/fuzz-$t.log"
    echo "fuzz: $t FAILED (log: $build/fuzz-$t.log)"
    return 1
  fi
  echo "fuzz: $t for $seconds s: $(grep -E '^Done|stat::average_exec_per_sec' "$build/fuzz-$t.log" | tr '\n' ' ')"
}
export -f one
export build seconds
printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'one {}'
