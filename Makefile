# Thin wrapper over CMake. `make demo` and `make test` install missing Debian packages first;
# `make test` also installs the pinned Python packages the parity tests compare against.
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

.PHONY: all deps python-deps configure build test test-hardening demo example-arithmetic example-solve-and-verify example-tool-use demo-foundation \
	bench bench-speedup chaos-soak format format-check clean images push

all: build

deps:
	@bash scripts/install-deps.sh

# torch, transformers and tokenizers, pinned, into .deps/python (tests/parity/; about 5.6 GB).
python-deps: deps
	@bash scripts/install-python-deps.sh

# A new build directory uses Ninja when it is installed (scripts/install-deps.sh installs it): its
# single build graph keeps both cores of a 2-core machine busy through the last targets. An
# existing directory keeps the generator it was configured with.
GENERATOR = $(if $(wildcard $(BUILD_DIR)/CMakeCache.txt),,$(if $(shell command -v ninja),-G Ninja))

# The torch-free libraries' test programs (SLUICE_SANITIZED_TEST_PROGRAMS) build and run in `make
# test`'s sanitizer trees rather than here, unless this tree is itself a sanitizer build; set
# SANITIZED_TESTS=ON to build them here too.
SANITIZED_TESTS ?= $(if $(SANITIZE),ON,OFF)

configure:
	cmake $(GENERATOR) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSLUICE_WERROR=ON \
	  -DSLUICE_SANITIZED_TESTS=$(SANITIZED_TESTS) $(CMAKE_FLAGS)

# MAKEFLAGS cleared: under `make test` this runs beside python-deps in a `make -j2`, whose
# jobserver would otherwise meet the build's own -j (and make warns about it).
build: configure
	MAKEFLAGS= cmake --build $(BUILD_DIR) -j $(JOBS)

# The pinned Python packages download and unpack (about two and a half minutes on a fresh
# machine, mostly I/O) while the build compiles: neither needs the other, only the tests need both.
# Then the torch-free libraries' tests under ASan+UBSan and TSan and the fuzz targets
# (test-hardening, below), except in a tree that is itself a sanitizer build.
test: deps
	@$(MAKE) --no-print-directory -j2 python-deps build
	$(TEST_ENV) ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) || \
	  { bash scripts/failed-test-output.sh $(BUILD_DIR); exit 1; }
ifeq ($(SANITIZE),)
	@JOBS=$(JOBS) bash scripts/test-hardening.sh all
endif

# The torch-free libraries' tests under ASan+UBSan and TSan, built by clang into
# build-hardening-{asan,tsan}/, and every fuzz target fuzzing for a while: the end of `make test`
# (scripts/test-hardening.sh; docs/development.md, "Sanitizers and fuzzing").
test-hardening: deps
	@bash scripts/test-hardening.sh all

demo: deps build
	@bash scripts/demo.sh $(BUILD_DIR)

# The other examples, run exactly as `make demo` runs its manifest (scripts/demo.sh:
# sluice up, sluice run, plot, sluice down); the experiment is named after the manifest's stem.
example-arithmetic: deps build
	@SLUICE_DEMO_MANIFEST=$(CURDIR)/examples/arithmetic-grpo.yaml bash scripts/demo.sh $(BUILD_DIR)

# Two trainers, 700 warm-start steps each and a verifier turn in every episode: about 8 minutes on
# 2 cores; the limit allows for slower machines.
example-solve-and-verify: deps build
	@SLUICE_DEMO_MANIFEST=$(CURDIR)/examples/solve-and-verify.yaml bash scripts/demo.sh $(BUILD_DIR) \
	  --timeout 1500

example-tool-use: deps build
	@SLUICE_DEMO_MANIFEST=$(CURDIR)/examples/tool-use-agent.yaml bash scripts/demo.sh $(BUILD_DIR)

# The shared core end to end on loopback: HTTP server, client, auth, wire format, metrics.
demo-foundation: deps build
	$(BUILD_DIR)/bin/sluice-foundation-demo --log-level=warn

bench: build
	@bash bench/run.sh $(BUILD_DIR)

# The dataflow design against the synchronous baseline (maxStaleness 0), one manifest run in both
# modes on the local cluster: a table, the ratio and a PNG (bench/speedup/speedup.py). About
# twice the demo's time; MANIFEST=examples/other.yaml to change the workload.
MANIFEST ?= $(CURDIR)/examples/reverse-grpo.yaml
bench-speedup: deps build
	@python3 bench/speedup/speedup.py --manifest $(MANIFEST) --build-dir $(BUILD_DIR)

# The chaos soak (bench/chaos_soak/chaos_soak.py): the main job under a seeded schedule of faults
# for MINUTES minutes, with the invariants checked throughout; docs/reliability.md has its figures.
MINUTES ?= 30
SEED ?= 1
chaos-soak: deps build
	@python3 bench/chaos_soak/chaos_soak.py --minutes $(MINUTES) --seed $(SEED) \
	    --bin-dir $(BUILD_DIR)/bin --kubectl $(CURDIR)/.tools/bin/kubectl

format:
	@git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs -r clang-format -i

format-check:
	@git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs -r clang-format --dry-run -Werror

clean:
	rm -rf build build-*

# Container images: docker/<name>.Dockerfile, tagged [$(REGISTRY)/]sluice/<name>:$(TAG), the
# chart's default images.<name>.repository (scripts/check-images.py checks that they agree).
# TAG defaults to the chart's appVersion. DOCKER=podman works too; DOCKER_BUILD_FLAGS passes
# extra flags to every build (e.g. --build-arg JOBS=8 --platform linux/amd64).
IMAGES := operator dataflow rollout trainer
REGISTRY ?=
TAG ?= $(shell sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\).*/\1/p' helm/sluice/Chart.yaml)
DOCKER ?= docker
DOCKER_BUILD_FLAGS ?=
image = $(if $(REGISTRY),$(REGISTRY)/)sluice/$(1):$(TAG)
require_docker = command -v $(DOCKER) >/dev/null 2>&1 || { \
	echo "$@: '$(DOCKER)' is not on PATH: building and pushing images needs a Docker engine" \
	  "(or DOCKER=podman). Without one, scripts/check-images.py checks the Dockerfiles." >&2; exit 1; }

images:
	@$(require_docker)
	@test -n "$(TAG)" || { echo "images: no TAG: helm/sluice/Chart.yaml has no appVersion" >&2; exit 1; }
	@set -e; for name in $(IMAGES); do \
	  echo "images: building $(call image,$$name)"; \
	  $(DOCKER) build -f docker/$$name.Dockerfile -t $(call image,$$name) \
	    --build-arg VERSION=$(TAG) \
	    --build-arg REVISION="$$(git rev-parse HEAD 2>/dev/null || true)" \
	    --build-arg SOURCE="$$(git config --get remote.origin.url 2>/dev/null || true)" \
	    $(DOCKER_BUILD_FLAGS) . ; \
	done

# Builds the images tagged for REGISTRY (cached layers make a rebuild quick), then pushes them.
push:
	@test -n "$(REGISTRY)" || { echo "push: REGISTRY is empty; say where to push, e.g." \
	  "make push REGISTRY=registry.example.com/rl (pushes REGISTRY/sluice/<name>:$(TAG))" >&2; exit 1; }
	@$(require_docker)
	@$(MAKE) --no-print-directory images REGISTRY="$(REGISTRY)" TAG="$(TAG)"
	@set -e; for name in $(IMAGES); do \
	  echo "push: $(call image,$$name)"; \
	  $(DOCKER) push $(call image,$$name); \
	done
