# sluice/rollout: sluice-rollout, a RolloutPool replica (the engine and the reward sandbox).
# Build from the repository root: `make images`, or
#   docker build -f docker/rollout.Dockerfile -t sluice/rollout:<version> .
# scripts/check-images.py checks this file without Docker (docs/operations.md, "Images").

# The run-time base. Debian 12's libtorch is a CPU build, so this image trains and generates on
# CPU. The CUDA build (issue 25) will replace the base with a CUDA runtime image and libtorch1.13
# with a CUDA libtorch and NCCL; check-images.py knows only debian:bookworm-slim until then.
ARG BASE=debian:bookworm-slim

# ---- build: the project's CMake, on the release the run-time base matches ----
FROM debian:bookworm AS build
WORKDIR /src
# The build dependencies from the one list developers use (scripts/install-deps.sh; it also fetches
# the pinned helm and kubectl the chart's tests use, unused here). Copied before the sources so
# this layer stays cached until the list changes; the four images' builds share it.
COPY scripts/install-deps.sh scripts/install-tools.py scripts/
RUN bash scripts/install-deps.sh
# What the CMake build reads (check-images.py fails when a directory it needs is missing here).
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY common/ common/
COPY kube/ kube/
COPY api/ api/
COPY crds/ crds/
COPY operator/ operator/
COPY workers/ workers/
COPY localcluster/ localcluster/
COPY demo/ demo/
COPY bench/ bench/
COPY tests/ tests/
# JOBS: parallel compile jobs (default: every core; each libtorch translation unit needs ~2 GB).
ARG JOBS=
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build --target sluice-rollout -j "${JOBS:-$(nproc)}"

# ---- sluice/rollout: the binary and the packages of the libraries it links ----
FROM ${BASE} AS rollout
ARG VERSION=dev
ARG REVISION=
ARG SOURCE=
# The repository has no LICENSE file yet: SPDX's "no assertion" until it does.
ARG LICENSES=NOASSERTION
LABEL org.opencontainers.image.title="sluice/rollout" \
      org.opencontainers.image.description="Sluice rollout worker: generates and scores rollouts" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}"
# The packages of the libraries sluice-rollout links directly (less libc6, libgcc-s1 and
# libstdc++6, in every Debian image); apt adds what they depend on. check-images.py compares
# the list with ldd and dpkg -S on the build's binary.
# libopenblas0-pthread: libtorch's BLAS, as in scripts/install-deps.sh (apt would otherwise
# pick the far slower reference libblas3).
# Not linked, needed at run time: ca-certificates (https model downloads verify against the
# system CAs), python3 and g++ (the code-execution reward and the python environment run and
# compile the model's programs).
# check-images: unlinked ca-certificates g++ python3
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libcpp-httplib0.11 libpcre2-8-0 libssl3 libtorch1.13 libyaml-cpp0.7 \
      libopenblas0-pthread \
      ca-certificates g++ python3 \
 && rm -rf /var/lib/apt/lists/*
# The non-root user the chart's pods and the operator's worker pods run as (runAsUser and
# runAsGroup 65532); numeric in USER so runAsNonRoot can verify it without /etc/passwd.
RUN groupadd --gid 65532 sluice \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sluice
COPY --from=build /src/build/bin/sluice-rollout /usr/local/bin/sluice-rollout
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/sluice-rollout"]
