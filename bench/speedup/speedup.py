#!/usr/bin/env python3
"""The dataflow design against the synchronous baseline, both run from one manifest in one go.

`make bench-speedup` (or: python3 bench/speedup/speedup.py [--manifest M] [--build-dir build]).

For the manifest's experiment it runs the local-cluster demo twice (scripts/demo.sh: sluice up,
sluice run, sluice down), with the same binaries and the same manifest except:

  async  the manifest as written (its spec.buffer.maxStaleness, its versionBarrier);
  sync   the trainer-centred synchronous baseline: spec.buffer.maxStaleness 0, and
         versionBarrier true when the Dataflow trains several policies. Admission control then
         leases only the groups of the batch being trained against the newest weights
         (docs/dataflow.md, "The synchronous baseline"): the rollout pool waits while the
         trainer steps, and the trainer waits while the pool generates.

Each run's progress records (DIR/experiments/<name>/progress.jsonl, one row per TrainerJob every
2 s) give, over the RL phase (after any warm start: TrainerJob step >= 1 to the last step):
wall time, versions per minute, trajectories/s, the trainer's busy share (1 - data-wait share),
the staleness of trained samples (per-step means: median and max), and the held-out eval
accuracy at the last version. Output: a table, the async/sync ratio of RL wall time with the
accuracy difference, and a PNG (gnuplot) of eval accuracy against RL wall time for both modes.

Not measured here: the rollout pool's busy share (the workers export tokens per second of engine
time, not idle time).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # python3-yaml is in scripts/install-deps.sh
    sys.exit("speedup: python3-yaml is missing; run `make deps` (scripts/install-deps.sh)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sync_manifest(docs):
    """The synchronous baseline of `docs` (a list of manifest documents), changed in place."""
    for d in docs:
        if d and d.get("kind") == "Dataflow":
            spec = d.setdefault("spec", {})
            spec.setdefault("buffer", {})["maxStaleness"] = 0
            roles = spec.get("workflow", {}).get("roles", [])
            if len({r.get("policy") for r in roles}) > 1:
                spec["versionBarrier"] = True
    return docs


def run_mode(mode, docs, args, work):
    stem = os.path.splitext(os.path.basename(args.manifest))[0]
    name = f"{stem}-{mode}"
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)
    state = os.path.join(work, f"state-{mode}")
    env = dict(os.environ, SLUICE_DEMO_MANIFEST=path, SLUICE_STATE_DIR=state)
    log = os.path.join(work, f"{name}.log")
    print(f"== {mode}: {path} (log {log})", flush=True)
    with open(log, "w") as out:
        rc = subprocess.call(
            ["bash", os.path.join(ROOT, "scripts", "demo.sh"), args.build_dir, "--name", name,
             "--timeout", str(args.timeout)],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(f"speedup: the {mode} run failed (exit {rc}); see {log}")
    rows = []
    with open(os.path.join(state, "experiments", name, "progress.jsonl")) as f:
        for line in f:
            rows.append(json.loads(line))
    return rows


def figures(rows):
    """The RL phase's figures from one run's progress rows (all TrainerJobs)."""
    trainers = sorted({r["trainer"] for r in rows if "trainer" in r})
    per = {}
    for t in trainers:
        mine = [r for r in rows if r.get("trainer") == t and r.get("step") is not None]
        steps = max(r.get("steps", 0) for r in mine)
        started = [r["t"] for r in mine if r["step"] == 0]
        ended = [r["t"] for r in mine if r["step"] >= steps]
        if not started or not ended:
            sys.exit(f"speedup: trainer {t} has no complete RL phase in the progress records")
        per[t] = (max(started), min(ended), steps, mine)
    t0 = min(v[0] for v in per.values())
    t1 = max(v[1] for v in per.values())
    rl = [r for r in rows if t0 <= r["t"] <= t1]
    busy = [1 - r["dataWaitShare"] for r in rl if r.get("dataWaitShare") is not None]
    stale = [r["stalenessMean"] for r in rl if r.get("stalenessMean") is not None]
    tps = [r["trajectoriesPerSecond"] for r in rl if r.get("trajectoriesPerSecond")]
    evals = {}
    for r in rows:
        if r.get("evalVersion") is not None and r.get("evalAccuracy") is not None:
            evals.setdefault(r["evalVersion"], (r["t"], r["evalAccuracy"]))
    steps = max(v[2] for v in per.values())
    last = max(evals) if evals else None
    return {
        "wall": t1 - t0,
        "steps": steps,
        "versions_per_min": steps / (t1 - t0) * 60,
        "trajectories_per_s": statistics.mean(tps) if tps else float("nan"),
        "trainer_busy": statistics.mean(busy) if busy else float("nan"),
        "staleness_p50": statistics.median(stale) if stale else float("nan"),
        "staleness_max": max(stale) if stale else float("nan"),
        "eval_version": last,
        "eval_accuracy": evals[last][1] if last is not None else float("nan"),
        "eval_curve": sorted((t - t0, v, acc) for v, (t, acc) in evals.items() if t >= t0),
    }


def plot(results, out):
    data = {}
    for mode, f in results.items():
        path = out + f".{mode}.dat"
        with open(path, "w") as fh:
            for t, v, acc in f["eval_curve"]:
                fh.write(f"{t:.1f} {acc * 100:.2f} {v}\n")
        data[mode] = path
    script = (
        "set terminal pngcairo size 900,500\n"
        f"set output '{out}'\n"
        "set xlabel 'RL wall time (s)'\nset ylabel 'held-out eval accuracy (%)'\n"
        "set key bottom right\nset grid\n"
        "plot " + ", ".join(f"'{p}' using 1:2 with linespoints title '{m}'"
                             for m, p in data.items()) + "\n")
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        return out
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"speedup: no plot ({e})", file=sys.stderr)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--manifest", default=os.path.join(ROOT, "examples", "reverse-grpo.yaml"))
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    ap.add_argument("--out", default=None, help="directory for manifests, logs and the plot")
    args = ap.parse_args()
    work = args.out or tempfile.mkdtemp(prefix="sluice-speedup.")
    os.makedirs(work, exist_ok=True)
    with open(args.manifest) as f:
        docs = list(yaml.safe_load_all(f))
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    print(f"machine: {os.cpu_count()} cores, {cpu}; manifest {args.manifest}")
    results = {}
    for mode in ("async", "sync"):
        mode_docs = list(yaml.safe_load_all(yaml.safe_dump_all(docs)))
        if mode == "sync":
            sync_manifest(mode_docs)
        results[mode] = figures(run_mode(mode, mode_docs, args, work))

    print()
    print(f"{'mode':6} {'RL wall s':>9} {'versions/min':>12} {'traj/s':>7} {'trainer busy':>12} "
          f"{'staleness p50/max':>17} {'eval acc':>9}")
    for mode, f in results.items():
        print(f"{mode:6} {f['wall']:9.1f} {f['versions_per_min']:12.1f} "
              f"{f['trajectories_per_s']:7.1f} {f['trainer_busy'] * 100:11.0f}% "
              f"{f['staleness_p50']:8.2f}/{f['staleness_max']:<8.2f} "
              f"{f['eval_accuracy'] * 100:8.1f}% (v{f['eval_version']})")
    a, s = results["async"], results["sync"]
    print(f"\nspeedup async/sync (RL wall time, {a['steps']} steps): {s['wall'] / a['wall']:.2f}x; "
          f"eval accuracy difference async - sync: "
          f"{(a['eval_accuracy'] - s['eval_accuracy']) * 100:+.1f} points")
    png = plot(results, os.path.join(work, "speedup.png"))
    if png:
        print(f"plot: {png}")


if __name__ == "__main__":
    main()
