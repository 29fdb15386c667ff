# Thin wrapper over CMake + CTest + pytest. `make serve` and `make test` are the README's quick start:
# each first runs scripts/bootstrap.sh, which installs only what is missing.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all bootstrap build serve test unit pytest asan fuzz clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)
	@cmake --build $(BUILD) -j $(JOBS)

serve: build
	$(BUILD)/tensorfold serve $(ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	TF_BUILD_DIR=$(abspath $(BUILD)) .venv/bin/python -m pytest -q tests

# Unit tests and the CLI/malformed-file suite under AddressSanitizer + UndefinedBehaviorSanitizer.
asan: bootstrap
	@[ -f build-asan/build.ninja ] || cmake -S . -B build-asan -G Ninja -DTENSORFOLD_SANITIZE=ON \
	  -DTENSORFOLD_MLX=OFF -DTENSORFOLD_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)
	TF_BUILD_DIR=$(abspath build-asan) .venv/bin/python -m pytest -q tests/cli

# Each libFuzzer target for FUZZ_SECONDS (default 30) seconds.
fuzz: bootstrap
	scripts/run_fuzzers.sh $${FUZZ_SECONDS:-30}

clean:
	rm -rf $(BUILD) build-asan build-fuzz
