#!/usr/bin/env bash
# `make demo`: the local-cluster training demo. A tiny model learns to write digit strings
# backwards on Sluice's embedded cluster (examples/reverse-grpo.yaml: a short SFT warm start, then
# GRPO, evaluated on held-out strings), end to end on this machine's CPUs:
#
#   1. `sluice up` in a state directory: $SLUICE_STATE_DIR if set, else a fresh `mktemp -d`.
#   2. `sluice run MANIFEST --timeout 900`: applies the manifest and follows the experiment until
#      its TrainerJob succeeds and the final evaluation is in, printing progress, a summary and
#      the line `eval accuracy: before X% -> after Y% (versions A -> B)`.
#   3. `sluice plot`: reward, eval accuracy, tokens/s, replicas and staleness over time, as a PNG
#      when gnuplot is on PATH (Debian: gnuplot-nox), else an SVG. Prints `plot: PATH`.
#   4. Prints `wall time: N s` (steps 1-3), then `sluice down` (on any exit, also a failed one).
#
# Usage: bash scripts/demo.sh [BUILD_DIR [SLUICE_RUN_ARGS...]]   (BUILD_DIR default: build)
#   SLUICE_DEMO_MANIFEST=FILE  run FILE instead of examples/reverse-grpo.yaml; the experiment
#                              is named after its file name without the extension (or --name).
#   SLUICE_STATE_DIR=DIR       use DIR as the cluster's state directory (kept afterwards).
#   SLUICE_DEMO_KEEP=1         leave the cluster running at the end and print how to stop it.
# SLUICE_RUN_ARGS go to `sluice run` after the defaults, e.g. `--interval 5` or `--eval-wait 0`.
#
# Exits with `sluice run`'s status when that fails (after plotting what was recorded), else with
# the status of the first other step that failed (`up`, `plot`), else 0.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${1:-build}
if [[ $# -gt 0 ]]; then shift; fi
run_args=("$@")
sluice="$build_dir/bin/sluice"
manifest=${SLUICE_DEMO_MANIFEST:-$root/examples/reverse-grpo.yaml}

if [[ ! -x $sluice ]]; then
  echo "demo: $sluice not found; build first (make build)" >&2
  exit 1
fi
if [[ ! -f $manifest ]]; then
  echo "demo: manifest $manifest not found" >&2
  exit 1
fi

# The experiment name `sluice run` derives: --name if given, else the manifest's stem.
experiment=$(basename "$manifest")
experiment=${experiment%.*}
for ((i = 0; i < ${#run_args[@]}; i++)); do
  case ${run_args[i]} in
    --name=*) experiment=${run_args[i]#--name=} ;;
    --name) if ((i + 1 < ${#run_args[@]})); then experiment=${run_args[i + 1]}; fi ;;
  esac
done

state_dir=${SLUICE_STATE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sluice-demo.XXXXXX")}
started=$(date +%s)

# shellcheck disable=SC2317  # Invoked by the EXIT trap.
finish() {
  local rc=$?
  trap - EXIT
  if [[ ${SLUICE_DEMO_KEEP:-0} == 1 ]]; then
    echo
    echo "The cluster keeps running (SLUICE_DEMO_KEEP=1). Stop it with:"
    echo "  $sluice down --state-dir $state_dir"
  else
    echo
    echo "== sluice down"
    "$sluice" down --state-dir "$state_dir" || true
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== Sluice local-cluster demo"
echo "state dir: $state_dir"
echo "manifest:  $manifest (experiment $experiment)"
echo
echo "== sluice up"
"$sluice" up --state-dir "$state_dir"
echo
echo "== sluice run"
run_rc=0
plot_rc=0
"$sluice" run "$manifest" --state-dir "$state_dir" --timeout 900 ${run_args[@]+"${run_args[@]}"} ||
  run_rc=$?

echo
progress="$state_dir/experiments/$experiment/progress.jsonl"
if [[ -s $progress ]]; then
  echo "== sluice plot"
  if command -v gnuplot >/dev/null 2>&1; then
    format=png
  else
    format=svg
    echo "(gnuplot is not on PATH, so the plot is an SVG; install gnuplot-nox for a PNG)"
  fi
  if plot=$("$sluice" plot "$experiment" --state-dir "$state_dir" --format "$format" \
    --output "$state_dir/experiments/$experiment/progress.$format"); then
    echo "plot: $plot"
  else
    plot_rc=$?
  fi
else
  echo "demo: nothing recorded in $progress; no plot" >&2
fi
echo "wall time: $(($(date +%s) - started)) s"

if ((run_rc != 0)); then
  echo "demo: sluice run failed (exit $run_rc); the components' logs: $sluice logs operator" \
    "--state-dir $state_dir (also apiserver, node), the pods' logs: kubectl logs" \
    "(KUBECONFIG=$state_dir/kubeconfig)" >&2
  exit "$run_rc"
fi
exit "$plot_rc"
