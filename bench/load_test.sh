#!/usr/bin/env bash
# Scrapes under load (issue 9): 50 concurrent scrapers (wrk) for 20 s against
# a daemon exporting >= 10,000 series, while full scans of a 204,800-file
# tree run. Prints wrk's latency distribution, the error counts, the series
# count and the machine's load; record them in docs/performance.md.
#
# The daemon watches the rules-cycle configuration of docs/performance.md
# (4 tiers x 100 jobs x 25 checkpoints) plus a fifth tier holding the scan
# benchmark's tree (4 jobs x 25 checkpoints x 1024 ranks x 2 files). That
# tier is added by a reload just before wrk starts, so its first (full) walk
# runs during the scrapes; while wrk runs, a file is created and removed in
# each of its checkpoint directories every second, so every later walk lists
# and stats all 204,800 files again (a full scan, not the steady state).
#
# Usage: [LOAD_GZIP=1] [LOAD_BIG=0] [LOAD_INTERVAL=15s] bench/load_test.sh [WORK_DIR] [BUILD]   (needs wrk: Debian package wrk)
set -euo pipefail
work=${1:-/tmp/ckptmon-load}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../$build/ckptmon"
duration=${LOAD_DURATION:-20}
conns=${LOAD_CONNECTIONS:-50}
mkdir -p "$work"
for t in staging rapid capacity archive; do
  if [ ! -d "$work/$t/job-99" ]; then
    python3 "$here/gen_tree.py" "$work/$t" --jobs 100 --checkpoints 25 --ranks 2 \
      --files-per-rank 1 --shard-bytes 1000000 >/dev/null
  fi
done
if [ "${LOAD_BIG:-1}" = 1 ] && [ ! -d "$work/big/job-3/step-25000" ]; then
  python3 "$here/gen_tree.py" "$work/big" >/dev/null
fi
rm -rf "$work/state" "$work/log"
base="global: {state_dir: $work/state, scan_interval: ${LOAD_INTERVAL:-1s}, scan_timeout: 60s}
tiers:
  - {name: staging, path: $work/staging, role: staging, drains_to: rapid}
  - {name: rapid, path: $work/rapid, role: rapid}
  - {name: capacity, path: $work/capacity, role: capacity}
  - {name: archive, path: $work/archive, role: capacity}"
printf '%s\n' "$base" >"$work/c.yml"
. "$here/serve_lib.sh"
pid=""
toucher=""
trap 'kill $pid ${toucher} 2>/dev/null || true' EXIT
start_serve "$bin" "$work/c.yml" "$work/log"
wait_ready 600
sleep 3  # the first rules cycle
series=$(curl -s "127.0.0.1:$port/metrics" | grep -vc '^#')
# The big tier now, so its first walk runs during the scrapes (LOAD_BIG=0:
# the 4-tier configuration alone, issue 16 item 10's figure).
if [ "${LOAD_BIG:-1}" = 1 ]; then
  printf '%s\n  - {name: big, path: %s, role: capacity}\n' "$base" "$work/big" >"$work/c.yml"
  kill -HUP $pid
  ( while :; do
      for d in "$work"/big/job-*/step-*; do : >"$d/.load-touch"; rm -f "$d/.load-touch"; done
      sleep 1
    done ) &
  toucher=$!
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# LOAD_GZIP=1: every request asks for gzip, as Prometheus does.
gzip_header=()
[ "${LOAD_GZIP:-0}" = 1 ] && gzip_header=(-H "Accept-Encoding: gzip")
wrk -t2 -c"$conns" -d"${duration}s" --timeout 10s --latency "${gzip_header[@]}" \
  "http://127.0.0.1:$port/metrics" \
  | tee "$work/wrk.txt"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
[ -n "$toucher" ] && kill $toucher 2>/dev/null || true
toucher=""
walks=$(grep -c 'tier=big' "$work/log" || true)
big=$(curl -s "127.0.0.1:$port/metrics" | awk '/^ckpt_checkpoints\{.*tier="big"/ {s+=$2} END {print s+0}')
echo "series exported before the run: $series"
echo "checkpoints catalogued on the big tier after the run: $big (of 100)"
echo "load average before / after: $load_before / $load_after ($(nproc) CPUs)"
echo "log lines about the big tier: $walks"
grep -E 'Non-2xx|Socket errors' "$work/wrk.txt" || echo "errors: none (no non-2xx responses, no socket errors)"
# The peer, right after and with the same wrk: node_exporter (Debian's
# prometheus-node-exporter, default collectors), which renders its own
# exposition on every request. Its series count is printed with it.
nodeexp=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [ -n "$nodeexp" ] && [ "${LOAD_PEER:-1}" = 1 ]; then
  nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # --web.max-requests=0: no cap on parallel scrapes (its default, 40,
  # answers the rest 503), as ckptmon has none.
  "$nodeexp" --web.listen-address="127.0.0.1:$nport" --web.max-requests=0 \
    >"$work/node_exporter.log" 2>&1 &
  npid=$!
  trap 'kill $pid ${toucher} $npid 2>/dev/null || true' EXIT
  until curl -sf "127.0.0.1:$nport/metrics" >/dev/null; do sleep 0.2; done
  echo "peer: node_exporter, $(curl -s "127.0.0.1:$nport/metrics" | grep -vc '^#') series"
  wrk -t2 -c"$conns" -d"${duration}s" --timeout 10s --latency "${gzip_header[@]}" \
    "http://127.0.0.1:$nport/metrics" | tee "$work/wrk-peer.txt"
  echo "load average after the peer: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
