#!/usr/bin/env bash
# Fuzzes one target of tests/fuzz/ (or all of them, one after another) for as long as you like:
# builds it with clang's libFuzzer, ASan and UBSan into the tree `make test-hardening` uses, and
# runs it from its seeds (tests/fuzz/run_fuzz.sh). The corpus it grows persists between runs in
# $ASAN_DIR/fuzz/work/<target>/corpus; a crash leaves its input there as crash-*, replayable with
# `$ASAN_DIR/fuzz/<target>_fuzz <file>` (or with the replay driver the everyday build makes,
# build/fuzz/<target>_fuzz, under gdb).
#
#   scripts/fuzz.sh <target|all> [seconds=600]     e.g. scripts/fuzz.sh wire_frame 3600
#
# Environment: ASAN_DIR (default build-hardening-asan), JOBS (build jobs, default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${1:?usage: $0 <target|all> [seconds]  (targets: tests/fuzz/*_fuzz.cpp)}
seconds=${2:-600}
dir=${ASAN_DIR:-$root/build-hardening-asan}
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
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_WITH_TORCH=OFF -DSLUICE_WITH_CUDA=OFF \
  -DSLUICE_WERROR=ON -DSLUICE_SANITIZE=address,undefined -DSLUICE_FUZZ=ON >/dev/null
MAKEFLAGS= cmake --build "$dir" -j "$jobs" --target "${targets[@]/%/_fuzz}"
for t in "${targets[@]}"; do
  dict=$root/tests/fuzz/$t.dict
  [[ -f $dict ]] || dict=""
  echo "fuzz: $t for ${seconds}s"
  bash "$root/tests/fuzz/run_fuzz.sh" "$dir/fuzz/${t}_fuzz" "$seconds" "$root/tests/fuzz/corpus/$t" \
    "$dir/fuzz/work/$t" $dict
done
