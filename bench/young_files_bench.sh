#!/usr/bin/env bash
# Young files in one job directory (issue 27, degraded): N files (default
# 100,000) changed within partial_after, in a directory whose mtime does not
# change, walked every 2 s. Before the recheck backoff every walk stat'ed each
# of them again for the whole settle time (2,000,080 stat calls in 20 s in
# the issue); now each is stat'ed again when due (tree_walk.hpp,
# recheck_due). Prints the statx calls and walks over each window, and the
# calls per file per walk against the 1 that every walk cost before.
# Usage: [FILES=100000] [WINDOWS="20 60 120"] bench/young_files_bench.sh [WORK_DIR] [BUILD]
set -euo pipefail
work=${1:-/tmp/ckptmon-young}
build=${2:-build}
files=${FILES:-100000}
windows=${WINDOWS:-20 60 120}
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../$build/ckptmon"
. "$here/serve_lib.sh"
rm -rf "$work" && mkdir -p "$work/tier/llama/loose" "$work/state"
python3 - "$work/tier/llama/loose" "$files" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, f"f{i:06d}"), "wb") as f:
        f.write(b"x")
PY
cat >"$work/ckptmon.yml" <<YML
global:
  state_dir: $work/state
  scan_interval: 2s
tiers:
  - {name: rapid, path: $work/tier, role: rapid, partial_after: 30m}
integrity: {enabled: false}
YML
start_serve "$bin" "$work/ckptmon.yml" "$work/serve.log"
trap 'kill $pid 2>/dev/null || true' EXIT
wait_ready 120
python3 - "$port" "$files" $windows <<'PY'
import sys, time, urllib.request
port, files, windows = sys.argv[1], int(sys.argv[2]), [int(w) for w in sys.argv[3:]]
def figures():
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        for name in ("ckptmon_scan_stat_calls_total", "ckptmon_scan_last_success_timestamp_seconds"):
            if line.startswith(name + "{") and 'tier="rapid"' in line:
                out[name] = float(line.rsplit(" ", 1)[1])
    return out
f0 = figures()
calls0, last = f0["ckptmon_scan_stat_calls_total"], f0["ckptmon_scan_last_success_timestamp_seconds"]
walks, t0 = 0, time.monotonic()
print(f"{files} young files in one directory, scan_interval 2s, from the first walk on")
print("| after | statx calls | walks | calls per file per walk (1 before) |")
print("| --- | --- | --- | --- |")
for w in windows:
    while time.monotonic() - t0 < w:
        time.sleep(0.25)
        f = figures()
        if f["ckptmon_scan_last_success_timestamp_seconds"] != last:
            last = f["ckptmon_scan_last_success_timestamp_seconds"]
            walks += 1
    calls = figures()["ckptmon_scan_stat_calls_total"] - calls0
    print(f"| {w} s | {calls:,.0f} | {walks} | {calls / (files * max(walks, 1)):.4f} |")
PY
