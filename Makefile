# The two commands in the README. Both work as root on a fresh Debian 12:
# they install what is missing, configure, build, then run.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
BUILD_TSAN ?= build-tsan
# make demo's own build: Release (-O2, no debug information, which is a third
# of the compile time of the Boost.Beast files), no tests or benchmarks.
BUILD_DEMO ?= build-demo
# tsan-test runs ckptmon_tsan_tests: the unit test files of the threaded parts
# (worker pool, collector runner, daemon snapshot publishing, HTTP server,
# tailer, integrity verifier, store writer, history, rules cycle,
# Alertmanager client, inotify watcher; tests/CMakeLists.txt lists them).
TSAN_FILTER ?= *
FUZZ_TIME  ?= 300
FUZZ_TEST_TIME ?= 10
FUZZ_TARGETS := event_line config_yaml web_config mountinfo http_request mountstats exposition event_row dcp_metadata
JOBS       ?= $(shell nproc)
# Warnings are errors in the builds `make test` makes (CI); a plain `make
# build` or `make deb` keeps the CMake default (off, for packagers).
WERROR     ?= ON
CMAKE_GEN  := -G Ninja

# make test's phase times (scripts/phase.sh): one line per phase, printed at the end.
PHASE_LOG  ?= $(BUILD)/make-test-phases.txt
PHASE      := scripts/phase.sh $(PHASE_LOG)

.PHONY: all deps test-deps build demo deb test test-build check lint lint-format format integration-test bench-smoke asan-test fuzz-build fuzz-test fuzz tsan-test clean

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The demo builds only what it runs, the daemon and the fake NVML library, in
# its own Release build directory (BUILD_DEMO).
demo: deps
	cmake -S . -B $(BUILD_DEMO) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DCKPTMON_TESTS=OFF -DCKPTMON_BENCH=OFF
	cmake --build $(BUILD_DEMO) -j $(JOBS) --target ckptmon ckptmon_fake_nvml
	$(BUILD_DEMO)/ckptmon demo

# The Debian package, from the normal build directory (cmake/install.cmake):
# $(BUILD)/ckptmon_<version>_<arch>.deb. Check it with lintian.
deb: build
	cd $(BUILD) && cpack -G DEB

# Everything, in phases whose times are printed at the end (docs/performance.md
# keeps them): the normal build with -Werror (the daemon, the fake NVML
# libraries and the benchmarks; the unit tests are compiled once, in the
# sanitized build), make lint, the benchmarks run once each (bench/smoke.sh),
# the integration tests on the normal build, every unit test under
# AddressSanitizer + UBSan, the threaded ones under ThreadSanitizer, then a
# short fuzz run of every target.
test:
	@rm -f $(PHASE_LOG)
	@$(PHASE) deps scripts/install-deps.sh test
	@$(PHASE) build $(MAKE) --no-print-directory test-build
	@$(PHASE) lint $(MAKE) --no-print-directory lint
	@$(PHASE) bench-smoke $(MAKE) --no-print-directory bench-smoke
	@$(PHASE) integration $(MAKE) --no-print-directory integration-test
	@$(PHASE) asan $(MAKE) --no-print-directory asan-test
	@$(PHASE) tsan $(MAKE) --no-print-directory tsan-test
	@$(PHASE) fuzz $(MAKE) --no-print-directory fuzz-test
	@$(PHASE) --report

test-build: deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCKPTMON_WERROR=$(WERROR)
	cmake --build $(BUILD) -j $(JOBS) --target ckptmon_integration ckptmon_benches

# The integration tests on the normal build; they wait on their peers more
# than they compute, so twice as many run as there are cores.
integration-test: test-build
	ctest --test-dir $(BUILD) --output-on-failure -j $$(( $(JOBS) * 2 )) -L integration --no-tests=error

bench-smoke: test-build
	bench/smoke.sh $(BUILD)

# The inner loop (scripts/check.sh says what it runs): incremental builds,
# clang-tidy on what changed, the unit tests of the touched layers and those
# above them, then the integration tests.
check: test-deps
	@scripts/check.sh $(BUILD) $(BUILD_ASAN) $(JOBS) $(WERROR)

# clang-format (check only) over every tracked C/C++ file with the checked-in
# .clang-format, and clang-tidy with the checked-in .clang-tidy on
# $(BUILD)/compile_commands.json; any finding fails (scripts/lint.sh).
# `make test` runs it after the normal build (it reads that build's
# compile_commands.json); `make lint-format` is the clang-format half alone.
# `make format` rewrites the files.
lint: test-deps $(BUILD)/build.ninja
	@scripts/lint.sh $(BUILD) $(JOBS)

lint-format: test-deps
	@scripts/lint.sh --format-only

format:
	git ls-files -z '*.cpp' '*.hpp' '*.c' '*.h' | xargs -0 clang-format -i

# asan-test builds only what `ctest -L unit` runs (the per-layer unit test
# binaries, ckptmon_unit_tests_<layer>, and the fake NVML libraries; the
# layers checks are Python over the sources), not the sanitized ckptmon
# binary, which no test there runs.
asan-test: deps
	cmake -S . -B $(BUILD_ASAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DCKPTMON_SANITIZE=ON -DCKPTMON_BENCH=OFF \
	  -DCKPTMON_WERROR=$(WERROR)
	cmake --build $(BUILD_ASAN) -j $(JOBS) --target ckptmon_unit_tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS) -L unit --no-tests=error

# ThreadSanitizer: its own build (RelWithDebInfo) of the threaded parts' unit
# tests; any report fails the run (halt_on_error).
tsan-test: deps
	cmake -S . -B $(BUILD_TSAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCKPTMON_TSAN=ON -DCKPTMON_BENCH=OFF \
	  -DCKPTMON_WERROR=$(WERROR)
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target ckptmon_tsan_tests
	TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1 \
	  $(BUILD_TSAN)/tests/ckptmon_tsan_tests --gtest_filter='$(TSAN_FILTER)' --gtest_brief=1

# The libFuzzer targets need clang and their own build directory; only they are
# built there. `fuzz-test` (part of `make test`) replays every seed corpus and
# fuzzes each target for FUZZ_TEST_TIME seconds; `make fuzz` fuzzes each for
# FUZZ_TIME seconds; JOBS targets at a time (scripts/fuzz-run.sh says where
# new inputs and crashes go).
fuzz-build: test-deps
	cmake -S . -B $(BUILD_FUZZ) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCKPTMON_FUZZ=ON -DCKPTMON_TESTS=OFF -DCKPTMON_BENCH=OFF
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target $(addsuffix _fuzz,$(FUZZ_TARGETS))

fuzz-test: fuzz-build
	@scripts/fuzz-run.sh $(BUILD_FUZZ) $(FUZZ_TEST_TIME) $(JOBS) $(FUZZ_TARGETS)

fuzz: fuzz-build
	@scripts/fuzz-run.sh $(BUILD_FUZZ) $(FUZZ_TIME) $(JOBS) $(FUZZ_TARGETS)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ) $(BUILD_DEMO)
