#!/usr/bin/env bash
# The GPU device check of issue 25: builds the GPU targets against the machine's own
# CUDA-enabled libtorch, runs the kernel tests and the CUDA path tests (model, engine, training
# backward against the CPU), then the GPU benchmarks, and prints every figure.
#
#   bash scripts/device-check.sh prepare   # here, with Debian's registry: download the -dev
#                                          # packages the GPU machine lacks into .device-check/debs
#   bash scripts/device-check.sh run [OUT] # on the GPU machine, from the repository root, with
#                                          # .device-check carried along; logs go to OUT
#                                          # (default: $OUT, else build-device/logs);
#                                          # SLUICE_DEVICE_CHECK_ONLY="decode-bench ..." runs
#                                          # only the steps named
#
# The GPU machine is bare: its Python has torch 2.x with CUDA, nvcc, CMake and ninja, but none of
# Debian's -dev packages Sluice builds with (yaml-cpp, httplib, gtest, ...) and no network. The
# packages travel as .deb files and are unpacked with dpkg -x into a private prefix (never into
# /), which CMake and pkg-config are pointed at.
#
# `run` on a machine without a GPU is the dry run: the same configure and build (against
# SLUICE_TORCH_DIR, default .deps/python/torch, the pinned wheel's libtorch), the CUDA tests skip,
# and the GPU benchmarks run with --cpu-dry-run on tiny shapes. Every step runs even when an
# earlier one failed; the summary at the end lists each step's result, and the exit status is
# non-zero when any failed.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
state=.device-check
debs=$state/debs

# Debian packages (bookworm) the GPU targets need at configure, compile and link time. Runtime
# libraries go along so the -dev packages' .so links resolve inside the prefix.
PACKAGES=(
  libcpp-httplib-dev libcpp-httplib0.11 libbrotli-dev libbrotli1 zlib1g-dev
  nlohmann-json3-dev libyaml-cpp-dev libyaml-cpp0.7 libssl-dev libssl3
  libsqlite3-dev libsqlite3-0 libgtest-dev libgmock-dev
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  libgloo-dev pkgconf pkgconf-bin libpkgconf3
)
# The check's steps after the build, each with the target it runs: the kernel tests and
# benchmark, the CUDA path tests, the GPU decode and training benchmarks.
# SLUICE_DEVICE_CHECK_ONLY="step ..." runs (and builds) only those steps, to spend less of a
# device lease re-checking one change.
declare -A STEP_TARGET=(
  [kernel-tests]=sluice_kernels_tests [cuda-path-tests]=sluice_cuda_tests
  [kernel-bench]=sluice_bench_kernels [decode-bench]=sluice_bench_gpu_decode
  [train-bench]=sluice_bench_gpu_train
)
STEPS=(kernel-tests cuda-path-tests kernel-bench decode-bench train-bench)
only=${SLUICE_DEVICE_CHECK_ONLY:-}

wanted() { [[ -z "$only" || " $only " == *" $1 "* ]]; }

prepare() {
  mkdir -p "$debs"
  rm -f "$debs"/*.deb
  (cd "$debs" && apt-get download "${PACKAGES[@]}") || {
    echo "device-check: apt-get download failed (run apt-get update first?)" >&2
    exit 1
  }
  echo "device-check: $(ls "$debs" | wc -l) packages, $(du -sh "$debs" | cut -f1), in $debs"
}

declare -a results=()
failed=0
# step NAME TIMEOUT_S COMMAND...: runs it, logs its output to $logs/NAME.log and the console.
step() {
  local name=$1 limit=$2
  shift 2
  local start rc
  start=$(date +%s)
  echo
  echo "=== $name ($*)"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  local secs=$(($(date +%s) - start))
  if ((rc == 0)); then
    results+=("ok      $name (${secs}s)")
  else
    results+=("FAILED  $name (rc $rc, ${secs}s)")
    failed=1
  fi
  return "$rc"
}

run() {
  logs=${1:-${OUT:-$root/build-device/logs}}
  mkdir -p "$logs"
  local have_gpu=0
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then have_gpu=1; fi
  local cores
  cores=$(nproc)

  echo "=== machine"
  date -u
  grep -m1 'model name' /proc/cpuinfo
  echo "cores: $cores"
  ((have_gpu)) && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm \
    --format=csv,noheader
  command -v nvcc >/dev/null && nvcc --version | tail -2
  c++ --version | head -1
  cmake --version | head -1

  # libtorch: the machine's Python torch on the GPU machine, else the pinned wheel's.
  local torch_dir=${SLUICE_TORCH_DIR:-}
  if [[ -z "$torch_dir" ]]; then
    if ((have_gpu)); then
      torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
    else
      torch_dir=$root/.deps/python/torch
    fi
  fi
  echo "libtorch: $torch_dir ($(grep -m1 '^__version__' "$torch_dir/version.py" 2>/dev/null))"

  # The Debian packages, unpacked into a prefix of their own.
  local prefix=$root/build-device/prefix
  rm -rf "$prefix"
  mkdir -p "$prefix"
  local n=0 deb
  for deb in "$debs"/*.deb; do
    [[ -f "$deb" ]] || continue
    dpkg -x "$deb" "$prefix" && n=$((n + 1))
  done
  echo "unpacked $n packages into $prefix"
  local multiarch=x86_64-linux-gnu
  export PKG_CONFIG_PATH=$prefix/usr/lib/$multiarch/pkgconfig:$prefix/usr/share/pkgconfig
  local pkg_config
  pkg_config=$(command -v pkg-config || true)
  if ((n > 0)); then
    # The prefix's .pc files say prefix=/usr: the sysroot maps them into the prefix.
    export PKG_CONFIG_SYSROOT_DIR=$prefix
    if [[ -z "$pkg_config" && -x $prefix/usr/bin/pkgconf ]]; then
      # The carried pkgconf needs its library from the prefix; nothing else gets the prefix on
      # its library path (the built programs find the prefix's libraries through their RPATH).
      pkg_config=$prefix/pkg-config
      printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$prefix/usr/lib/$multiarch" \
        "$prefix/usr/bin/pkgconf" >"$pkg_config"
      chmod +x "$pkg_config"
    fi
  fi
  echo "pkg-config: ${pkg_config:-none}"

  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  local arch=90
  ((have_gpu)) || arch="80;90"
  rm -rf build-device/build
  step configure 300 cmake -S . -B build-device/build "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_dir;$prefix/usr" \
    -DOPENSSL_ROOT_DIR="$prefix/usr" \
    ${pkg_config:+-DPKG_CONFIG_EXECUTABLE="$pkg_config"} \
    -DSLUICE_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DSLUICE_WITH_TORCH=ON -DCMAKE_POLICY_VERSION_MINIMUM=3.5
  local targets=() name
  for name in "${STEPS[@]}"; do
    wanted "$name" && targets+=("${STEP_TARGET[$name]}")
  done
  if ((${#targets[@]} == 0)); then
    echo "device-check: SLUICE_DEVICE_CHECK_ONLY names no step of: ${STEPS[*]}" >&2
    return 2
  fi
  step build 1200 cmake --build build-device/build -j "$cores" --target "${targets[@]}"

  local bin=build-device/build/bin
  local tests=build-device/build/tests
  ((have_gpu)) && nvidia-smi
  local dry=()
  ((have_gpu)) || dry=(--cpu-dry-run)
  wanted kernel-tests && step kernel-tests 300 "$tests/sluice_kernels_tests" --gtest_brief=1
  # Without a GPU the CUDA path tests compare the CPU with itself: that proves their code only.
  wanted cuda-path-tests &&
    SLUICE_CUDA_PATHS_DRY_RUN=$((1 - have_gpu)) step cuda-path-tests 300 "$tests/sluice_cuda_tests"
  wanted kernel-bench && step kernel-bench 300 "$bin/sluice_bench_kernels"
  wanted decode-bench && step decode-bench 300 "$bin/sluice_bench_gpu_decode" "${dry[@]}"
  wanted train-bench && step train-bench 300 "$bin/sluice_bench_gpu_train" "${dry[@]}"

  echo
  echo "=== summary ($( ((have_gpu)) && echo GPU || echo 'dry run, no GPU'))"
  printf '%s\n' "${results[@]}" | tee "$logs/summary.txt"
  return "$failed"
}

case ${1:-} in
  prepare) prepare ;;
  run)
    shift
    run "$@"
    ;;
  *)
    sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
