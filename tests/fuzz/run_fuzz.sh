#!/usr/bin/env bash
# Runs one libFuzzer target for a while: new inputs go to a work corpus under the build directory
# (the seeds in the repository stay as they are); a crash, leak, timeout or sanitizer report fails
# the run and leaves the input that caused it in the work directory as crash-*, leak-*, timeout-*
# or oom-*, replayable with `<target> <file>`.
#
#   tests/fuzz/run_fuzz.sh <target binary> <seconds> <seed dir> <work dir> [dictionary]
set -euo pipefail
if (($# < 4)); then
  echo "usage: $0 <target binary> <seconds> <seed dir> <work dir> [dictionary]" >&2
  exit 2
fi
bin=$1 seconds=$2 seeds=$3 work=$4 dict=${5:-}
[[ -x $bin ]] || { echo "run_fuzz: no target binary at $bin" >&2; exit 1; }
[[ -d $seeds ]] || { echo "run_fuzz: no seed directory at $seeds" >&2; exit 1; }
mkdir -p "$work/corpus"
# ASan's larger frames: see scripts/test-hardening.sh.
ulimit -s 65536 2>/dev/null || true
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536
      -print_final_stats=1 -artifact_prefix="$work/")
[[ -n $dict ]] && args+=(-dict="$dict")
# ASan's leak checker at exit; UBSan reports abort (the targets are built -fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$bin" "${args[@]}" "$work/corpus" "$seeds"
