# Thin wrapper over CMake. `make demo` and `make test` install missing Debian packages first.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= 2
CMAKE_FLAGS ?=
SANITIZE ?=

TEST_ENV :=
ifneq ($(SANITIZE),)
BUILD_DIR := build-$(SANITIZE)
CMAKE_FLAGS += -DSLUICE_SANITIZE=$(SANITIZE)
endif
ifeq ($(SANITIZE),thread)
# Debian's cpp-httplib is not built with TSan; see the suppression file.
TEST_ENV := TSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/tsan.supp
endif

.PHONY: all deps configure build test demo example-arithmetic example-solve-and-verify example-tool-use demo-foundation \
	bench format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

configure:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSLUICE_WERROR=ON $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: deps build
	$(TEST_ENV) ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) || \
	  { bash scripts/failed-test-output.sh $(BUILD_DIR); exit 1; }

demo: deps build
	@bash scripts/demo.sh $(BUILD_DIR)

# The other examples, run exactly as `make demo` runs its manifest (scripts/demo.sh:
# sluice up, sluice run, plot, sluice down); the experiment is named after the manifest's stem.
example-arithmetic: deps build
	@SLUICE_DEMO_MANIFEST=$(CURDIR)/examples/arithmetic-grpo.yaml bash scripts/demo.sh $(BUILD_DIR)

example-solve-and-verify: deps build
	@SLUICE_DEMO_MANIFEST=$(CURDIR)/examples/solve-and-verify.yaml bash scripts/demo.sh $(BUILD_DIR)

example-tool-use: deps build
	@SLUICE_DEMO_MANIFEST=$(CURDIR)/examples/tool-use-agent.yaml bash scripts/demo.sh $(BUILD_DIR)

# The shared core end to end on loopback: HTTP server, client, auth, wire format, metrics.
demo-foundation: deps build
	$(BUILD_DIR)/bin/sluice-foundation-demo --log-level=warn

bench: build
	@bash bench/run.sh $(BUILD_DIR)

format:
	@git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs -r clang-format -i

format-check:
	@git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs -r clang-format --dry-run -Werror

clean:
	rm -rf build build-*
