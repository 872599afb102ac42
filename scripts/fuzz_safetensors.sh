#!/usr/bin/env bash
# Builds the safetensors header fuzzer (tests/fuzz/safetensors_header_fuzz.cpp) with clang's
# libFuzzer, AddressSanitizer and UBSan, and runs it for a while.
#
#   scripts/fuzz_safetensors.sh [seconds=60]
#
# Environment: CXX (default clang++), OUT (default build-fuzz), JOBS (parallel fuzzing jobs,
# default 1). The corpus persists in $OUT/safetensors_corpus between runs; a crash leaves its
# input in $OUT/ as crash-*, replayable with `$OUT/safetensors_header_fuzz <file>`.
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
cxx=${CXX:-clang++}
out=${OUT:-$root/build-fuzz}
jobs=${JOBS:-1}
bin=$out/safetensors_header_fuzz
corpus=$out/safetensors_corpus
mkdir -p "$out" "$corpus"

echo "fuzz_safetensors: building $bin with $cxx"
"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root" "$root/tests/fuzz/safetensors_header_fuzz.cpp" "$root/workers/model/safetensors.cpp" \
  "$root/workers/model/safetensors_writer.cpp" "$root/workers/model/tensor_dtype.cpp" \
  "$root/common/status.cpp" -o "$bin"

# Seeds: a few valid files so the fuzzer starts from the format rather than from nothing.
seed() {  # seed <name> <header json> <data as printf escapes>
  local n=${#2}
  printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x\\x00\\x00\\x00\\x00' $((n & 255)) \
    $((n >> 8 & 255)) $((n >> 16 & 255)) $((n >> 24 & 255)))" >"$corpus/seed-$1"
  printf '%s' "$2" >>"$corpus/seed-$1"
  printf "$3" >>"$corpus/seed-$1"
}
seed empty '{}      ' ''
seed f32 '{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' \
  '\x00\x00\x80\x3f\x00\x00\x00\xc0'
seed mixed '{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]},"c":{"dtype":"F16","shape":[],"data_offsets":[8,10]},"d":{"dtype":"U8","shape":[0],"data_offsets":[10,10]}}' \
  '\x00\x00\x80\x3f\x80\x3f\x00\xc0\x00\x3c'
seed ints '{"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"j":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},"k":{"dtype":"BOOL","shape":[2],"data_offsets":[12,14]},"l":{"dtype":"F64","shape":[1],"data_offsets":[14,22]}}' \
  '\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xf0\x3f'

parallel=()
((jobs > 1)) && parallel=(-jobs="$jobs" -workers="$jobs")
echo "fuzz_safetensors: running for ${seconds}s"
"$bin" -max_total_time="$seconds" -dict="$root/tests/fuzz/safetensors.dict" -max_len=4096 \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/" \
  "${parallel[@]}" "$corpus"
