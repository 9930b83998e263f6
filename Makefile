# The two commands of the set-up contract: `make run` and `make test`.
BUILD ?= build
JOBS ?= 2
EXAMPLE ?= examples/cpu_training_step.pt.trace.json.gz
FUZZ_SECONDS ?= 600

.PHONY: deps configure build run test bench fuzz clean python

deps:
	@scripts/install-deps

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	./$(BUILD)/stepscope analyze $(EXAMPLE)

# The Python module in the build tree: PYTHONPATH=$(BUILD)/python imports it.
python: configure
	@cmake --build $(BUILD) -j$(JOBS) --target stepscope_python
	@echo "built: PYTHONPATH=$(BUILD)/python /usr/bin/python3 -c 'import stepscope'"

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

bench: build
	scripts/run-bench $(BUILD)

fuzz: deps
	@scripts/install-deps clang libclang-rt-14-dev
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" \
	  -DSTEPSCOPE_FUZZ=ON -DSTEPSCOPE_TESTS=OFF -DSTEPSCOPE_BENCH=OFF > /dev/null
	cmake --build build-fuzz -j$(JOBS) --target fuzz_kineto
	scripts/run-fuzz build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-fuzz
