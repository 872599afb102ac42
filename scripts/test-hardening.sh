#!/usr/bin/env bash
# The sanitizer and fuzzing runs that end `make test` (alone: `make test-hardening`; issue 23,
# docs/development.md "Sanitizers and fuzzing"), on the libraries without libtorch, built by clang:
#
#   asan  AddressSanitizer + LeakSanitizer + UBSan: the unit and service tests of common, the kube
#         client, the local API server, the dataflow, weights and the rollout sandbox, rewards
#         and workflows; then every fuzz target (tests/fuzz/) fuzzing for SLUICE_FUZZ_SECONDS
#         (10 here) from its seeds.
#   tsan  ThreadSanitizer: the tests of common (the HTTP server and client, queues, cancellation,
#         logging, metrics) and of the dataflow service, the most concurrent of the servers.
#
#   scripts/test-hardening.sh [asan|tsan|all]
#
# A full sanitizer build of everything (make test SANITIZE=...) costs about 25 minutes per
# sanitizer on 2 cores; these trees build only the programs named below, at -O0 with line tables
# (-g1, so reports keep file:line): the ASan tree builds in 8.5 minutes at -O0 against 14.7 at -O1,
# and its tests took 199 s against 223 s (docs/development.md). scripts/fuzz.sh, which runs for
# throughput, builds its own -O1 tree. Any sanitizer report fails its test: UBSan aborts
# (-fno-sanitize-recover), ASan and LeakSanitizer exit non-zero, TSan exits 66.
# Environment: JOBS (default 2), ASAN_DIR, TSAN_DIR (build directories), SLUICE_FUZZ_SECONDS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${JOBS:-2}
asan_dir=${ASAN_DIR:-$root/build-hardening-asan}
tsan_dir=${TSAN_DIR:-$root/build-hardening-tsan}
stage=${1:-all}
case $stage in asan | tsan | all) ;; *)
  echo "usage: $0 [asan|tsan|all]" >&2
  exit 2
  ;;
esac

# The model I/O parsers (safetensors, tokenizer.json, config.json) are fuzzed rather than run
# through their unit tests here, and the API types are generated: CI's budget has no room left.
# sluice_sanitized_tests: SLUICE_SANITIZED_TEST_PROGRAMS (cmake/SluiceTesting.cmake), which the
# main tree of `make test` leaves to this tree.
asan_programs=(sluice_sanitized_tests sluice_fuzz_targets)
# The kube client and the API server under TSan would add about 7 minutes of build to CI.
tsan_programs=(sluice_common_tests sluice_dataflow_tests)

# ASan's redzones make stack frames several times larger: a JSON value at the depth every parser
# accepts (kMaxJsonDepth, 1000) is printed recursively in about 8 MiB there, against a few hundred
# KiB in the product. Threads take their default stack size from this limit.
ulimit -s 65536 2>/dev/null ||
  echo "test-hardening: cannot raise the stack limit; deep-JSON tests may overflow under ASan" >&2

step_start=-1  # SECONDS when the current step started; -1 before the first
step() {  # step <what>: prints what starts and how long the previous step took
  local now=$SECONDS
  ((step_start >= 0)) && echo "test-hardening: done in $((now - step_start)) s"
  step_start=$now
  [[ -n ${1:-} ]] && echo "test-hardening: $1"
  return 0
}

# configure <dir> <cmake args...>: a torch-free clang tree, with Ninja where a new tree can have
# it (its one build graph keeps both cores busy to the last link).
configure() {
  local dir=$1
  shift
  local generator=()
  [[ ! -f $dir/CMakeCache.txt ]] && command -v ninja >/dev/null && generator=(-G Ninja)
  cmake "${generator[@]}" -S "$root" -B "$dir" -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" -DSLUICE_WITH_TORCH=OFF \
    -DSLUICE_WITH_CUDA=OFF -DSLUICE_WERROR=ON "$@" >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log" >&2; return 1; }
}

# Tests of programs this tree does not build are registered as <program>_NOT_BUILT: left out.
run_tests() {  # run_tests <dir> [ctest args...]
  local dir=$1
  shift
  ctest --test-dir "$dir" -j "$jobs" --output-on-failure -E '_NOT_BUILT$' "$@"
}

if [[ $stage == asan || $stage == all ]]; then
  mkdir -p "$asan_dir"
  step "ASan+UBSan: building ${asan_programs[*]} into $asan_dir"
  configure "$asan_dir" -DSLUICE_SANITIZE=address,undefined -DSLUICE_FUZZ=ON \
    -DSLUICE_FUZZ_SECONDS="${SLUICE_FUZZ_SECONDS:-10}"
  MAKEFLAGS= cmake --build "$asan_dir" -j "$jobs" --target "${asan_programs[@]}"
  step "ASan+UBSan: unit and service tests"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run_tests "$asan_dir" -LE '^fuzz$'
  step "fuzzing every target (tests/fuzz/) for $(grep -m1 -oP 'SLUICE_FUZZ_SECONDS:STRING=\K.*' \
    "$asan_dir/CMakeCache.txt") s"
  run_tests "$asan_dir" -L '^fuzz$'
fi

if [[ $stage == tsan || $stage == all ]]; then
  mkdir -p "$tsan_dir"
  step "TSan: building ${tsan_programs[*]} into $tsan_dir"
  configure "$tsan_dir" -DSLUICE_SANITIZE=thread
  MAKEFLAGS= cmake --build "$tsan_dir" -j "$jobs" --target "${tsan_programs[@]}"
  step "TSan: tests"
  # Debian's cpp-httplib is not built with TSan: tests/sanitizers/tsan.supp. The fuzz targets'
  # replay drivers are not built in this tree (the ASan tree fuzzes from their seeds).
  TSAN_OPTIONS="suppressions=$root/tests/sanitizers/tsan.supp second_deadlock_stack=1" \
    run_tests "$tsan_dir" -LE '^fuzz-replay$'
fi
step
echo "test-hardening: passed"
