#!/usr/bin/env bash
# make test's phase timer (issue 24).
#   scripts/phase.sh LOG NAME CMD...  runs CMD, appends "NAME SECONDS ok|failed" to LOG,
#                                     and on failure prints the phases so far;
#   scripts/phase.sh LOG --report     prints the phases and their total.
set -uo pipefail
log=$1
shift
report() {
  echo
  echo "make test phases (wall seconds):"
  awk '{ printf "  %-12s %6d s  %s\n", $1, $2, $3; t += $2 } END { printf "  %-12s %6d s (%d min %d s)\n", "total", t, t / 60, t % 60 }' "$log"
}
if [ "$1" = "--report" ]; then
  report
  exit 0
fi
name=$1
shift
mkdir -p "$(dirname "$log")"
start=$(date +%s)
"$@"
rc=$?
end=$(date +%s)
if [ $rc -eq 0 ]; then status=ok; else status=failed; fi
echo "$name $((end - start)) $status" >>"$log"
if [ $rc -ne 0 ]; then
  report >&2
  echo "make test: phase $name failed (exit $rc)" >&2
fi
exit $rc
