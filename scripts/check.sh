#!/usr/bin/env bash
# make check: the inner loop (issue 24), incremental wherever it can be.
#  1. the normal build (-Werror, ccache when installed): ckptmon, the fake
#     NVML libraries, the benchmarks;
#  2. make lint: clang-format over every file, the layer check, clang-tidy on
#     the units whose input changed since clang-tidy last passed them
#     (scripts/tidy_cached.py: a changed header re-checks its includers);
#  3. the unit tests, under AddressSanitizer + UBSan (the build make test
#     uses), of the layers the change touched and those above them
#     (scripts/touched_layers.py, against the tree of the last make check
#     that passed; the first one runs them all);
#  4. every integration test, on the normal build.
# Usage: scripts/check.sh BUILD BUILD_ASAN JOBS WERROR
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 asan=$2 jobs=$3 werror=$4
t0=$(date +%s)
say() { echo "check: $* ($(( $(date +%s) - t0 )) s)"; }

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCKPTMON_WERROR="$werror"
fi
cmake --build "$build" -j "$jobs" --target ckptmon_integration ckptmon_benches
say "build ok"
scripts/lint.sh "$build" "$jobs"
python3 cmake/check_layers.py --root .
say "lint and layers ok"

if [ ! -f "$asan/build.ninja" ]; then
  cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCKPTMON_SANITIZE=ON -DCKPTMON_BENCH=OFF \
    -DCKPTMON_WERROR="$werror"
fi
# Regenerate first if CMake must (a new test file), so the layer map is current.
ninja -C "$asan" build.ninja >/dev/null
stamp=$asan/check-passed.txt
mapfile -t layers < <(python3 scripts/touched_layers.py "$stamp" "$asan/unit_test_layers.txt")
targets=()
for l in "${layers[@]}"; do
  # A layer's folder (tools/review) names its test binary by its last part.
  if grep -q " $l\$" "$asan/unit_test_layers.txt"; then targets+=("ckptmon_unit_tests_${l##*/}"); fi
done
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$asan" -j "$jobs" --target "${targets[@]}"
  # gtest_discover_tests takes PROPERTIES as key-value pairs, so the
  # "unit.<layer>" label does not reach CTest yet: every unit test runs (the
  # binaries of untouched layers are current, as they link only layers below).
  say "unit tests, rebuilt for ${layers[*]} (ASan+UBSan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs" -L '^unit$' --no-tests=error
else
  say "no layer touched since the last make check: no unit tests to run"
fi
say "integration tests"
ctest --test-dir "$build" --output-on-failure -j $((jobs * 2)) -L integration
python3 scripts/touched_layers.py "$stamp" --record
say "all ok"
