#!/bin/sh
# restore-drill read throughput against fio (Debian package fio) in one run,
# on the same files: a DCP checkpoint of RANKS shards of SHARD_MiB written by
# tests/integration/dcp_fixture.py, read back cold by `ckptmon restore-drill
# --cold` (RANKS reader threads, 4 MiB preads, POSIX_FADV_DONTNEED first) and
# by fio with RANKS jobs, one shard each, rw=read, bs=4M, invalidate=1 (the
# same fadvise). Throughput: the drill's bytes / its read phase; fio's
# aggregate read bandwidth. Prints one line per round and the ratio of the
# medians (target: the drill at least 0.8x fio).
#
#   bench/restore_drill_vs_fio.sh [DIR] [RANKS] [SHARD_MiB] [ROUNDS]
set -eu
BIN=${CKPTMON_BIN:-$(dirname "$0")/../build/ckptmon}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-/var/tmp/ckptmon-drill-bench}
RANKS=${2:-4}
SHARD=${3:-256}
ROUNDS=${4:-3}
command -v fio >/dev/null || { echo "fio missing: apt-get install fio" >&2; exit 1; }
rm -rf "$DIR"
CK="$DIR/tier/job/step-1"
# Rows of 1 MiB (262144 fp32 values): RANKS x SHARD rows in all.
HERE="$HERE" /usr/bin/python3 - "$CK" "$RANKS" "$SHARD" <<'PY'
import os
import sys
sys.path.insert(0, os.path.join(os.environ["HERE"], "..", "tests", "integration"))
import dcp_fixture
path, ranks, shard = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dcp_fixture.write_dcp(path, {"model.w": ("tensor", "float32", ranks * shard, 262144)}, ranks=ranks)
PY
sync
jobs=""
r=0
while [ $r -lt "$RANKS" ]; do
  jobs="$jobs --name=rank$r --filename=$CK/__${r}_0.distcp"
  r=$((r + 1))
done
drill_rates=""
fio_rates=""
i=0
while [ $i -lt "$ROUNDS" ]; do
  i=$((i + 1))
  d=$("$BIN" restore-drill "$DIR/tier" --cold --format json |
      /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["bytes"] / r["phases"]["read"] / 1048576)')
  # shellcheck disable=SC2086
  f=$(fio --rw=read --bs=4M --invalidate=1 --ioengine=psync --group_reporting \
        --output-format=json $jobs |
      /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["jobs"][0]["read"]["bw_bytes"] / 1048576)')
  printf 'round %d: restore-drill %.0f MiB/s, fio %.0f MiB/s\n' "$i" "$d" "$f"
  drill_rates="$drill_rates $d"
  fio_rates="$fio_rates $f"
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
md=$(median "$drill_rates")
mf=$(median "$fio_rates")
printf 'median: restore-drill %.0f MiB/s, fio %.0f MiB/s, ratio %.2f\n' "$md" "$mf" "$(echo "$md / $mf" | bc -l)"
rm -rf "$DIR"
