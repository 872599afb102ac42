#!/usr/bin/env bash
# Fuzzes one target of tests/fuzz/ (or all of them, one after another) for as long as you like:
# builds it with clang's libFuzzer, ASan and UBSan at -O1 into build-fuzz/ (3 to 18 times the
# executions per second of the -O0 tree `make test-hardening` builds for CI's budget: wire_frame
# and cel, 10 s each), and runs it from its seeds (tests/fuzz/run_fuzz.sh). The corpus it grows
# persists between runs in $FUZZ_DIR/fuzz/work/<target>/corpus; a crash leaves its input there as
# crash-*, replayable with `$FUZZ_DIR/fuzz/<target>_fuzz <file>` (or under gdb with the replay
# driver a GCC build makes with SANITIZED_TESTS=ON: build/fuzz/<target>_fuzz).
#
#   scripts/fuzz.sh <target|all> [seconds=600]     e.g. scripts/fuzz.sh wire_frame 3600
#
# Environment: FUZZ_DIR (default build-fuzz), JOBS (build jobs, default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:?usage: $0 <target|all> [seconds]  (targets: tests/fuzz/*_fuzz.cpp)}
seconds=${2:-600}
dir=${FUZZ_DIR:-$root/build-fuzz}
jobs=${JOBS:-2}

if [[ $target == all ]]; then
  targets=()
  for f in "$root"/tests/fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" _fuzz.cpp)"); done
else
  [[ -f $root/tests/fuzz/${target}_fuzz.cpp ]] ||
    { echo "fuzz: no target tests/fuzz/${target}_fuzz.cpp" >&2; exit 2; }
  targets=("$target")
fi

cmake -S "$root" -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DSLUICE_WITH_TORCH=OFF -DSLUICE_WITH_CUDA=OFF \
  -DSLUICE_WERROR=ON -DSLUICE_SANITIZE=address,undefined -DSLUICE_FUZZ=ON >/dev/null
MAKEFLAGS= cmake --build "$dir" -j "$jobs" --target "${targets[@]/%/_fuzz}"
for t in "${targets[@]}"; do
  dict=$root/tests/fuzz/$t.dict
  [[ -f $dict ]] || dict=""
  echo "fuzz: $t for ${seconds}s"
  bash "$root/tests/fuzz/run_fuzz.sh" "$dir/fuzz/${t}_fuzz" "$seconds" "$root/tests/fuzz/corpus/$t" \
    "$dir/fuzz/work/$t" $dict
done
