# The two commands in the README. Both work as root on a fresh Debian 12:
# they install what is missing, configure, build, then run.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_TIME  ?= 20
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja

.PHONY: all deps test-deps build demo deb test unit-test integration-test asan-test fuzz-test clean

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

# Everything: unit and integration tests on the normal build, then the unit
# tests again under AddressSanitizer + UBSan, then a short fuzz run.
test: test-deps build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) asan-test
	$(MAKE) fuzz-test

asan-test: deps
	cmake -S . -B $(BUILD_ASAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DCKPTMON_SANITIZE=ON -DCKPTMON_BENCH=OFF
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS) -L unit

# The libFuzzer targets need clang and their own build directory; only they are
# built there. New inputs go to $(BUILD_FUZZ)/corpus, never into the source tree.
fuzz-test: test-deps
	cmake -S . -B $(BUILD_FUZZ) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCKPTMON_FUZZ=ON -DCKPTMON_TESTS=OFF -DCKPTMON_BENCH=OFF
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target event_line_fuzz
	mkdir -p $(BUILD_FUZZ)/corpus/event_line
	$(BUILD_FUZZ)/fuzz/event_line_fuzz -max_total_time=$(FUZZ_TIME) -max_len=4096 -timeout=10 \
	  -dict=fuzz/event_line.dict -print_final_stats=1 \
	  $(BUILD_FUZZ)/corpus/event_line fuzz/corpus/event_line

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
