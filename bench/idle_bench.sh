#!/usr/bin/env bash
# The idle daemon (issue 16, item 10): resident memory and CPU of `ckptmon
# serve` with nothing scraping it, next to node_exporter measured the same way
# in the same window, so the figures are ratios to a peer.
#
# Rows (IDLE_ROWS, default all three):
#   15s   4 tiers x 100 jobs x 25 checkpoints x 2 ranks (10,000 checkpoints,
#         the trees bench/load_test.sh generates), scan_interval 15s
#         (the product's default)
#   1s    the same trees, scan_interval 1s (a stress row: every tier is walked
#         and the rules cycle runs every second)
#   100k  4 tiers x 250 jobs x 100 checkpoints, 1 rank x 1 file each
#         (100,000 checkpoints), scan_interval 15s
# For each row: start the daemon on a fresh state dir, wait for /-/ready and
# for every checkpoint to be catalogued, let IDLE_SETTLE seconds of walks pass,
# then read utime+stime (/proc/PID/stat) of the daemon and of node_exporter at
# the start and the end of an IDLE_WINDOW-second window, the daemon's VmRSS
# once a second through it (median and maximum), and VmRSS/VmHWM
# (/proc/PID/status) at its end. Nothing scrapes either process in the window.
#
# Usage: [IDLE_ROWS="15s 1s 100k"] [IDLE_WINDOW=60] [IDLE_SETTLE=35]
#        bench/idle_bench.sh [WORK_DIR] [BUILD]
# The trees are generated once under WORK_DIR (default /tmp/mem-trees).
set -euo pipefail
work=${1:-/tmp/mem-trees}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
case $build in /*) bin="$build/ckptmon" ;; *) bin="$here/../$build/ckptmon" ;; esac
rows=${IDLE_ROWS:-15s 1s 100k}
window=${IDLE_WINDOW:-60}
settle=${IDLE_SETTLE:-35}
hz=$(getconf CLK_TCK)
nodeexp=$(command -v prometheus-node-exporter || command -v node_exporter || true)
[ -n "$nodeexp" ] || { echo "needs node_exporter (Debian package prometheus-node-exporter)"; exit 1; }
mkdir -p "$work"

gen() { # DIR JOBS CHECKPOINTS RANKS
  if [ ! -d "$1/job-$(($2 - 1))/step-$(($3 * 1000))" ]; then
    python3 "$here/gen_tree.py" "$1" --jobs "$2" --checkpoints "$3" --ranks "$4" \
      --files-per-rank 1 --shard-bytes 1000000 >/dev/null 2>&1
  fi
}
ticks() { # PID -> utime+stime in clock ticks
  sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

. "$here/serve_lib.sh"
pid=""
npid=""
trap 'kill $pid $npid 2>/dev/null || true' EXIT

# The peer: node_exporter with its default collectors, idle like the daemon.
nport=$(free_port)
"$nodeexp" --web.listen-address="127.0.0.1:$nport" >"$work/node_exporter.log" 2>&1 &
npid=$!
for _ in $(seq 100); do curl -sf "127.0.0.1:$nport/metrics" >/dev/null && break; sleep 0.1; done

printf '%-6s %12s %8s %8s %10s %10s %10s %10s %10s %10s %9s\n' row checkpoints \
  'series' 'CPU %' 'VmRSS KiB' 'RSS med' 'RSS max' 'VmHWM KiB' 'node CPU %' 'node RSS' 'load avg'
for row in $rows; do
  case $row in
    15s | 1s) jobs=100 ckpts=25 ranks=2 interval=$row prefix=$work/t10k ;;
    100k) jobs=250 ckpts=100 ranks=1 interval=15s prefix=$work/t100k ;;
    *) echo "unknown row $row"; exit 1 ;;
  esac
  for t in staging rapid capacity archive; do gen "$prefix/$t" "$jobs" "$ckpts" "$ranks"; done
  want=$((4 * jobs * ckpts))
  rm -rf "$work/state" "$work/log"
  cat >"$work/c.yml" <<YML
global: {state_dir: $work/state, scan_interval: $interval, scan_timeout: 60s}
tiers:
  - {name: staging, path: $prefix/staging, role: staging, drains_to: rapid}
  - {name: rapid, path: $prefix/rapid, role: rapid}
  - {name: capacity, path: $prefix/capacity, role: capacity}
  - {name: archive, path: $prefix/archive, role: capacity}
YML
  start_serve "$bin" "$work/c.yml" "$work/log"
  wait_ready 900
  # Every checkpoint catalogued (whatever its state).
  while :; do
    have=$(curl -s "127.0.0.1:$port/metrics" | awk '/^ckpt_checkpoints\{/ {s+=$2} END {print s+0}')
    [ "$have" -ge "$want" ] && break
    [ $(($(date +%s) - start)) -gt 900 ] && { echo "catalogued $have of $want after 900 s"; exit 1; }
    sleep 2
  done
  series=$(curl -s "127.0.0.1:$port/metrics" | grep -vc '^#')
  sleep "$settle"
  d0=$(ticks "$pid") n0=$(ticks "$npid")
  # VmRSS once a second through the window: the walks come and go within
  # it, so its median and maximum say more than the reading at its end.
  rss=()
  for _ in $(seq "$window"); do
    sleep 1
    rss+=("$(kib "$pid" VmRSS)")
  done
  d1=$(ticks "$pid") n1=$(ticks "$npid")
  read -r rss_med rss_max < <(printf '%s\n' "${rss[@]}" | sort -n |
    awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)], a[NR]}')
  printf '%-6s %12s %8s %8s %10s %10s %10s %10s %10s %10s %9s\n' "$row" "$have" "$series" \
    "$(awk -v a="$d0" -v b="$d1" -v h="$hz" -v w="$window" 'BEGIN {printf "%.2f", 100 * (b - a) / h / w}')" \
    "$(kib "$pid" VmRSS)" "$rss_med" "$rss_max" "$(kib "$pid" VmHWM)" \
    "$(awk -v a="$n0" -v b="$n1" -v h="$hz" -v w="$window" 'BEGIN {printf "%.2f", 100 * (b - a) / h / w}')" \
    "$(kib "$npid" VmRSS)" "$(cut -d' ' -f1 /proc/loadavg)"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
done
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); window ${window}s after ${settle}s of walks"
