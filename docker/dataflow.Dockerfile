# sluice/dataflow: sluice-dataflow, the experience service of a Dataflow (CPU only).
# Build from the repository root: `make images`, or
#   docker build -f docker/dataflow.Dockerfile -t sluice/dataflow:<version> .
# scripts/check-images.py checks this file without Docker (docs/operations.md, "Images").

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
 && cmake --build build --target sluice-dataflow -j "${JOBS:-$(nproc)}"

# ---- sluice/dataflow: the binary and the packages of the libraries it links ----
FROM debian:bookworm-slim AS dataflow
ARG VERSION=dev
ARG REVISION=
ARG SOURCE=
# The repository has no LICENSE file yet: SPDX's "no assertion" until it does.
ARG LICENSES=NOASSERTION
LABEL org.opencontainers.image.title="sluice/dataflow" \
      org.opencontainers.image.description="Sluice dataflow: the experience service" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}"
# The packages of the libraries sluice-dataflow links directly (less libc6, libgcc-s1 and
# libstdc++6, in every Debian image); apt adds what they depend on. check-images.py compares
# the list with ldd and dpkg -S on the build's binary.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libcpp-httplib0.11 libpcre2-8-0 libssl3 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
# The non-root user the chart's pods and the operator's worker pods run as (runAsUser and
# runAsGroup 65532); numeric in USER so runAsNonRoot can verify it without /etc/passwd.
RUN groupadd --gid 65532 sluice \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sluice
COPY --from=build /src/build/bin/sluice-dataflow /usr/local/bin/sluice-dataflow
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/sluice-dataflow"]
