#!/bin/sh
# Burst throughput against fio (Debian package fio) in one run, on the same
# directory: the same number of files of the same size, written sequentially
# in 1 MiB blocks by the same number of parallel writers, each file fsynced
# when it is done. Prints one line per round and the ratio of the medians.
#
#   bench/burst_vs_fio.sh [DIR] [RANKS] [SHARD_MiB] [CHECKPOINTS] [ROUNDS]
#
# burst writes RANKS shards per checkpoint, CHECKPOINTS checkpoints one after
# the other, plus each checkpoint's small commit marker; fio runs RANKS jobs
# that each write CHECKPOINTS files of SHARD_MiB (file_service_type=sequential,
# fsync_on_close=1). Throughput = file bytes / wall time of the whole command.
set -eu
BIN=${CKPTMON_BIN:-$(dirname "$0")/../build/ckptmon}
DIR=${1:-/var/tmp/ckptmon-bench}
RANKS=${2:-4}
SHARD=${3:-64}
CKPTS=${4:-4}
ROUNDS=${5:-3}
command -v fio >/dev/null || { echo "fio missing: apt-get install fio" >&2; exit 1; }
mkdir -p "$DIR"
BYTES=$((RANKS * SHARD * CKPTS * 1048576))
now() { date +%s.%N; }
rates_b=""
rates_f=""
i=0
while [ $i -lt "$ROUNDS" ]; do
  i=$((i + 1))
  rm -rf "$DIR/burst" "$DIR/fio"; mkdir -p "$DIR/burst" "$DIR/fio"; sync
  run_burst() {
    t0=$(now)
    "$BIN" burst --target "$DIR/burst" --ranks "$RANKS" --shard-size "${SHARD}MiB" \
      --checkpoints "$CKPTS" --interval 0s --format json >/dev/null
    t1=$(now)
    "$BIN" burst --target "$DIR/burst" --cleanup >/dev/null
    sync
  }
  run_fio() {
    t2=$(now)
    # No preallocation (burst does not fallocate either); one file open per
    # job at a time, so fsync_on_close fsyncs each file when it is done.
    fio --name=burst --directory="$DIR/fio" --rw=write --bs=1M --ioengine=psync \
      --numjobs="$RANKS" --nrfiles="$CKPTS" --filesize="${SHARD}M" --size="$((SHARD * CKPTS))M" \
      --file_service_type=sequential --openfiles=1 --fsync_on_close=1 --fallocate=none \
      --group_reporting >/dev/null
    t3=$(now)
    rm -rf "$DIR/fio"/*
    sync
  }
  # Alternate which goes first: the page cache and the device's write-back
  # state favour neither.
  if [ $((i % 2)) -eq 1 ]; then run_burst; run_fio; else run_fio; run_burst; fi
  b=$(echo "$BYTES / ($t1 - $t0) / 1048576" | bc -l)
  f=$(echo "$BYTES / ($t3 - $t2) / 1048576" | bc -l)
  printf 'round %d: burst %.1f MiB/s, fio %.1f MiB/s, ratio %.3f\n' "$i" "$b" "$f" "$(echo "$b / $f" | bc -l)"
  rates_b="$rates_b $b"
  rates_f="$rates_f $f"
done
median() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(median $rates_b)
mf=$(median $rates_f)
printf 'files: %d x %d MiB, %d writers, fsync per file\n' "$((RANKS * CKPTS))" "$SHARD" "$RANKS"
printf 'median: burst %.1f MiB/s, fio %.1f MiB/s, burst/fio = %.3f\n' "$mb" "$mf" "$(echo "$mb / $mf" | bc -l)"
rm -rf "$DIR/burst" "$DIR/fio"
