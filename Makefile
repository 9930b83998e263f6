# The two commands of the set-up contract: `make run` and `make test`.
BUILD ?= build
JOBS ?= 2
EXAMPLE ?= examples/cpu_training_step.pt.trace.json.gz
FUZZ_SECONDS ?= 600
PREFIX ?= /usr/local

.PHONY: deps deps-run configure configure-run build run test test-sanitize bench bench-ranks fuzz clean python install

deps:
	@scripts/install-deps

# The packages the command itself needs: a first `make run` does not wait for the tests' ones
# (GoogleTest, PyTorch, Chromium...).
deps-run:
	@scripts/install-deps --command-only

# The test, bench and Python options are set on every configure, so one build folder serves both
# commands: `make run` turns them off, `make test` back on, and the libraries' objects (same flags
# either way) are not rebuilt in between.
configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DSTEPSCOPE_TESTS=ON -DSTEPSCOPE_BENCH=ON -DSTEPSCOPE_PYTHON=ON > /dev/null

configure-run: deps-run
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DSTEPSCOPE_TESTS=OFF -DSTEPSCOPE_BENCH=OFF -DSTEPSCOPE_PYTHON=OFF > /dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

# The binary and its libraries only: on a fresh machine the first verdict comes after about a
# third of the full build (every test, tool and the Python module).
run: configure-run
	@cmake --build $(BUILD) -j$(JOBS) --target stepscope
	./$(BUILD)/stepscope analyze $(EXAMPLE)

# The Python module in the build tree: PYTHONPATH=$(BUILD)/python imports it.
python: configure
	@cmake --build $(BUILD) -j$(JOBS) --target stepscope_python
	@echo "built: PYTHONPATH=$(BUILD)/python /usr/bin/python3 -c 'import stepscope'"

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The binary in PREFIX/bin, a man page per command in PREFIX/share/man/man1, bash and zsh
# completions in PREFIX/share/{bash-completion/completions,zsh/site-functions}; DESTDIR, when
# set, is put before every path (for packaging). Same as `cmake --install build --prefix PREFIX`.
install: configure
	@cmake --build $(BUILD) -j$(JOBS) --target stepscope stepscope_clidoc
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

bench: build
	scripts/run-bench $(BUILD)

# Generated jobs of 64, 512 and 4,096 ranks analysed by 1, 2 and 4 MPI processes.
bench-ranks: build
	bench/scale_ranks.sh $(BUILD)

# libFuzzer under ASan+UBSan, with clang: each target for FUZZ_SECONDS (see scripts/run-fuzz).
FUZZ_TARGETS ?= fuzz_kineto fuzz_pipeline fuzz_nsys fuzz_memory
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

fuzz: deps
	@scripts/install-deps clang libclang-rt-14-dev
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $(SANITIZE_FLAGS)" \
	  -DSTEPSCOPE_FUZZ=ON -DSTEPSCOPE_TESTS=OFF -DSTEPSCOPE_BENCH=OFF -DSTEPSCOPE_PYTHON=OFF > /dev/null
	cmake --build build-fuzz -j$(JOBS) --target $(FUZZ_TARGETS)
	scripts/run-fuzz build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Every test, built with clang under ASan+UBSan (any undefined behaviour aborts the test), in
# build-asan. The Python module is left out: it would need the sanitizer runtime preloaded.
test-sanitize: deps
	@scripts/install-deps clang libclang-rt-14-dev
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
	  -DSTEPSCOPE_BENCH=OFF -DSTEPSCOPE_PYTHON=OFF > /dev/null
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j$(JOBS)

clean:
	rm -rf $(BUILD) build-fuzz build-asan
