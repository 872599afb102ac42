#!/usr/bin/env bash
# `make bench`: runs every benchmark binary and prints its figures.
set -euo pipefail
build_dir=${1:-build}
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for b in "$build_dir"/bin/sluice_bench_*; do
  [[ -x "$b" ]] || continue
  "$b"
  echo
done
