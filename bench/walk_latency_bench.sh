#!/bin/bash
# Walk benchmark on a file system with real metadata latency: a DCP-like tree
# of 20,000 shard files served by bench/delayfs (FUSE pass-through that
# answers every getattr/lookup, readdir and readlink after DELAY), measured
# in one run: `find -printf '%s %T@\n'` (serial) against `ckptmon scan` at
# walk_concurrency 1, 8 and 32, each a full walk by a fresh process. Checks
# that every concurrency produced the same catalog as the serial walk of the
# same tree without FUSE. Prints a table; never a test.
#
#   bench/walk_latency_bench.sh [BUILD_DIR] [DELAYS_US...]     (default: build 500 2000)
#
# Needs /dev/fuse, fusermount3 (Debian fuse3) and libfuse3-dev (delayfs is
# built by CMake as build/bench/delayfs when fuse3 is found).
set -euo pipefail
build=${1:-build}
shift || true
delays=("$@")
[ ${#delays[@]} -gt 0 ] || delays=(500 2000)
ckptmon=$build/ckptmon
delayfs=$build/bench/delayfs
src_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/ckptmon-walk-bench-XXXXXX)
mnt=$work/mnt
cleanup() {
  fusermount3 -u "$mnt" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$mnt"

# 2 jobs x 5 checkpoints x 1000 ranks x 2 files = 20,000 shards (+10 .metadata).
python3 "$src_dir/gen_tree.py" "$work/src" --jobs 2 --checkpoints 5 --ranks 1000 \
  --files-per-rank 2 --shard-bytes 4096 2>/dev/null
now=1800000000

config() {  # PATH CONCURRENCY
  printf 'global: {state_dir: %s/state}\ntiers:\n  - {name: bench, path: %s, role: rapid, jobs: {depth: 1}, walk_concurrency: %s}\n' \
    "$work" "$1" "$2" > "$work/c$2.yml"
  echo "$work/c$2.yml"
}

# The reference catalog: the serial walk of the tree without FUSE.
"$ckptmon" scan --format json --now $now --config.file "$(config "$work/src" 1)" bench \
  | sed "s#$work/src#TREE#g" > "$work/ref.json"
ref_n=$(grep -c '"path"' "$work/ref.json" || true)

timed() {  # LABEL CMD...: prints wall seconds and CPU seconds (user+sys)
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$work/time" "$@" > "$work/out" 2>"$work/err" || {
    cat "$work/err" >&2
    return 1
  }
  t1=$(date +%s.%N)
  read -r u s < "$work/time"
  echo "$(echo "$t1 - $t0" | bc -l) $(echo "$u + $s" | bc -l)"
}

printf '%-8s %-28s %10s %8s %10s %s\n' delay what seconds cpu_s vs_find catalog
for d in "${delays[@]}"; do
  "$delayfs" "$work/src" "$mnt" "$d" -o max_threads=128 &
  for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
  mountpoint -q "$mnt"
  read -r fw fc < <(timed find "$mnt" -printf '%s %T@\n')
  printf '%-8s %-28s %10.2f %8.2f %10s %s\n' "${d}us" "find -printf '%s %T@'" "$fw" "$fc" 1.00 \
    "$(wc -l < "$work/out") lines"
  for c in 1 8 32; do
    cfg=$(config "$mnt" "$c")
    read -r w cpu < <(timed "$ckptmon" scan --format json --now $now --config.file "$cfg" bench)
    sed "s#$mnt#TREE#g" "$work/out" > "$work/c$c.json"
    if cmp -s "$work/ref.json" "$work/c$c.json"; then same="same ($ref_n checkpoints)"; else same=DIFFERENT; fi
    printf '%-8s %-28s %10.2f %8.2f %10.3f %s\n' "${d}us" "ckptmon scan c=$c" "$w" "$cpu" \
      "$(echo "$w / $fw" | bc -l)" "$same"
  done
  fusermount3 -u "$mnt"
  wait
done
