#!/usr/bin/env bash
# Parses one valid range-query answer of MiB (default 15) with ckptmon's
# parser and with nlohmann::json's document tree (the peer), each in its own
# process, and prints both and their ratios (docs/performance.md).
# Usage: bench/prom_parse_bench.sh [BUILD_DIR] [MiB]
set -euo pipefail
b=${1:-build}/bench/prom_parse_bench
mib=${2:-15}
printf '%-9s %12s %9s %8s %14s\n' parser body_bytes samples seconds peak_extra_MiB
read -r _ bytes n1 t1 m1 < <("$b" ckptmon "$mib")
read -r _ _ n2 t2 m2 < <("$b" nlohmann "$mib")
printf '%-9s %12s %9s %8s %14s\n' ckptmon "$bytes" "$n1" "$t1" "$m1" nlohmann "$bytes" "$n2" "$t2" "$m2"
# ckptmon refuses more than 2,000,000 samples (0 then); the tree has no cap.
[ "$n1" = "$n2" ] || [ "$n1" = 0 ] || { echo "sample counts differ: $n1 != $n2" >&2; exit 1; }
awk -v a="$m1" -v b="$m2" -v c="$t1" -v d="$t2" \
  'BEGIN { printf "memory ckptmon/nlohmann %.3f, time ckptmon/nlohmann %.3f\n", a / b, c / d }'
