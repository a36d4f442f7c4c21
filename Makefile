# The two commands in the README. Both work as root on a fresh Debian 12:
# they install what is missing, configure, build, then run.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
BUILD_TSAN ?= build-tsan
# tsan-test runs ckptmon_tsan_tests: the unit test files of the threaded parts
# (worker pool, collector runner, daemon snapshot publishing, HTTP server,
# tailer, integrity verifier, store writer, history, rules cycle,
# Alertmanager client, inotify watcher; tests/CMakeLists.txt lists them).
TSAN_FILTER ?= *
FUZZ_TIME  ?= 300
FUZZ_TEST_TIME ?= 10
FUZZ_TARGETS := event_line config_yaml web_config mountinfo http_request mountstats exposition event_row
JOBS       ?= $(shell nproc)
# Warnings are errors in the builds `make test` makes (CI); a plain `make
# build` or `make deb` keeps the CMake default (off, for packagers).
WERROR     ?= ON
CMAKE_GEN  := -G Ninja

.PHONY: all deps test-deps build demo deb test lint lint-format format unit-test integration-test asan-test fuzz-build fuzz-test fuzz fuzz-run tsan-test clean

all: build

deps:
	@scripts/install-deps.sh build

test-deps:
	@scripts/install-deps.sh test

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/ckptmon demo

# The Debian package, from the normal build directory (cmake/install.cmake):
# $(BUILD)/ckptmon_<version>_<arch>.deb. Check it with lintian.
deb: build
	cd $(BUILD) && cpack -G DEB

# Everything: the normal build with -Werror, make lint, unit and integration
# tests on it, then the unit tests again under AddressSanitizer + UBSan, the
# threaded ones under ThreadSanitizer, then a short fuzz run.
test: test-deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCKPTMON_WERROR=$(WERROR)
	cmake --build $(BUILD) -j $(JOBS)
	$(MAKE) --no-print-directory lint
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) asan-test
	$(MAKE) tsan-test
	$(MAKE) fuzz-test

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

# asan-test builds only what `ctest -L unit` runs (ckptmon_unit_tests and the
# fake NVML libraries it depends on; the layers checks are Python over the
# sources), not the sanitized ckptmon binary, which no test there runs.
asan-test: deps
	cmake -S . -B $(BUILD_ASAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DCKPTMON_SANITIZE=ON -DCKPTMON_BENCH=OFF \
	  -DCKPTMON_WERROR=$(WERROR)
	cmake --build $(BUILD_ASAN) -j $(JOBS) --target ckptmon_unit_tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS) -L unit

# ThreadSanitizer: its own build (RelWithDebInfo) of the threaded parts' unit
# tests; any report fails the run (halt_on_error).
tsan-test: deps
	cmake -S . -B $(BUILD_TSAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCKPTMON_TSAN=ON -DCKPTMON_BENCH=OFF \
	  -DCKPTMON_WERROR=$(WERROR)
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target ckptmon_tsan_tests
	TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:second_deadlock_stack=1 \
	  $(BUILD_TSAN)/tests/ckptmon_tsan_tests --gtest_filter='$(TSAN_FILTER)' --gtest_brief=1

# The libFuzzer targets need clang and their own build directory; only they are
# built there. New inputs go to $(BUILD_FUZZ)/corpus/<target>, never into the
# source tree; the seeds are fuzz/corpus/<target>. `fuzz-test` (part of `make
# test`) replays every seed corpus and fuzzes each target for FUZZ_TEST_TIME
# seconds; `make fuzz` fuzzes each for FUZZ_TIME seconds. A crash leaves its
# input in $(BUILD_FUZZ)/crash-<target>-*: make it a unit test with the fix.
fuzz-build: test-deps
	cmake -S . -B $(BUILD_FUZZ) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCKPTMON_FUZZ=ON -DCKPTMON_TESTS=OFF -DCKPTMON_BENCH=OFF
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target $(addsuffix _fuzz,$(FUZZ_TARGETS))

fuzz-test: fuzz-build
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_TIME=$(FUZZ_TEST_TIME)

fuzz: fuzz-build
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_TIME=$(FUZZ_TIME)

fuzz-run:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$t; \
	  dict=; if [ -f fuzz/$$t.dict ]; then dict=-dict=fuzz/$$t.dict; fi; \
	  echo "fuzz: $$t for $(FUZZ_RUN_TIME) s"; \
	  if ! $(BUILD_FUZZ)/fuzz/$${t}_fuzz -max_total_time=$(FUZZ_RUN_TIME) -max_len=8192 -timeout=10 \
	      -print_final_stats=1 $$dict -artifact_prefix=$(BUILD_FUZZ)/crash-$$t- \
	      $(BUILD_FUZZ)/corpus/$$t fuzz/corpus/$$t > $(BUILD_FUZZ)/fuzz-$$t.log 2>&1; then \
	    tail -n 60 $(BUILD_FUZZ)/fuzz-$$t.log; exit 1; \
	  fi; \
	  grep -E '^Done|stat::average_exec_per_sec' $(BUILD_FUZZ)/fuzz-$$t.log; \
	done

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ)
