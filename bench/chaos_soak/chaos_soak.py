#!/usr/bin/env python3
"""The chaos soak: the main job under a seeded schedule of faults, with the invariants checked.

`make chaos-soak MINUTES=30` (or: python3 bench/chaos_soak/chaos_soak.py --minutes 30
[--seed 1] [--bin-dir build/bin] [--kubectl kubectl] [--report FILE]).

It starts a local cluster (`sluice up`, with the node agent's fast failure detection) and runs
experiments back to back until --minutes have passed (at least one): each is the `make demo`
manifest (examples/reverse-grpo.yaml) shortened to --steps RL steps, with 2 trainer ranks that
checkpoint every 5 steps and 2 rollout replicas pinned to region west (the trainer to east), in a
namespace of its own, followed by `sluice run`. While it runs, faults come one at a time at
seeded random intervals (mean --fault-every seconds) while the trainer has more than 15 steps to
go, the kinds in a seeded random order that takes each once before any repeats:

  replica        kubectl delete pod of a rollout replica
  dataflow       SIGKILL of the dataflow's process (the node agent restarts the container)
  trainer-rank   SIGKILL of a trainer rank's process (the operator restarts the gang)
  node           `sluice node fail` of a node hosting replicas but not the dataflow or a rank,
                 recovered once the pool is whole again
  control-plane  SIGKILL of the API server and the operator, then `sluice up` again

and each is followed until it has recovered (the pod back and ready, the gang restarted, the
pool whole, the control plane healthy), which is timed. Every 2 s, and continuously while a fault
recovers, the invariants are checked: the TrainerJob's version never goes down, and the
Dataflow's accounting holds (GET /v1/status: every accepted group was acknowledged, is in an
unacknowledged batch, was dropped as stale or is buffered; every served group is acknowledged
or unacknowledged). At the end of each experiment the TrainerJob must have Succeeded, and the
Dataflow must have acknowledged exactly one batch of groupsPerBatch groups per RL step: more is
a batch trained twice (duplicated), fewer, or an accepted trajectory in no bucket, is lost.

Output: kills by kind, recoveries and their times (p50, max), lost and duplicated trajectories,
the experiments' held-out accuracy (before -> after RL); a JSON report with --report. Exit 0 only
when every experiment succeeded with 0 lost and 0 duplicated and every fault recovered.
"""

import argparse
import base64
import json
import os
import random
import re
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["replica", "dataflow", "trainer-rank", "node", "control-plane"]
# The example's objects (examples/reverse-grpo.yaml).
EXAMPLE, DATAFLOW, POOL, POLICY = "reverse-grpo", "digits", "rev-rollout", "rev"
# As in the e2e tests: a failed node is NotReady after 6 s, its pods Failed 1 s later.
FAST_NODES = {
    "SLUICE_NODE_HEARTBEAT_INTERVAL": "500ms",
    "SLUICE_NODE_NODE_MONITOR_GRACE_PERIOD": "6s",
    "SLUICE_NODE_POD_EVICTION_TIMEOUT": "1s",
    "SLUICE_OPERATOR_STATUS_PERIOD": "1s",
}
RECOVERY_TIMEOUT = 180  # Seconds a fault may take to recover before it counts as not recovered.
# A recovery slower than this still counts, but keeps diagnostics as an unrecovered fault does: a
# rank kill once took 125 s (the collective timeout) and the soak had kept nothing to say why.
SLOW_RECOVERY = 60


def edit(text, old, new):
    """Replaces the one occurrence of `old`; the example changed if there is not exactly one."""
    if text.count(old) != 1:
        sys.exit(f"chaos-soak: examples/{EXAMPLE}.yaml no longer holds exactly one {old!r}")
    return text.replace(old, new)


def manifest(steps):
    with open(os.path.join(ROOT, "examples", f"{EXAMPLE}.yaml")) as f:
        text = f.read()
    text = edit(text, "\n      count: 20000\n", "\n      count: 8000\n")
    text = edit(text, "\n    everyVersions: 50\n", f"\n    everyVersions: {60 + steps}\n")
    text = edit(text, "\n    samples: 400\n", "\n    samples: 100\n")
    text = edit(text, "\n  steps: 590 ", f"\n  steps: {steps} ")
    text = edit(text, "\n  template:\n    resources:\n      cpu: 1\n      memory: 1Gi\n",
                "\n  drain: {gracePeriodSeconds: 5}\n  template:\n    nodeSelector: "
                "{topology.kubernetes.io/region: local-eu-west}\n    resources:\n"
                "      cpu: 1\n      memory: 1Gi\n")
    text = edit(text, "\n  replicas: 1\n  template:\n    resources:\n      cpu: 2\n",
                "\n  replicas: 2\n  checkpoint:\n    everySteps: 5\n"
                "    pvc: {claimName: checkpoints}\n  template:\n    nodeSelector: "
                "{topology.kubernetes.io/region: local-us-east}\n    resources:\n      cpu: 1\n")
    return text + ("---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: checkpoints}\n"
                   "spec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 256Mi}}\n")


class Cluster:
    def __init__(self, args, state):
        self.args, self.state = args, state
        self.kubeconfig = os.path.join(state, "kubeconfig")
        self.up_cmd = [os.path.join(args.bin_dir, "sluice"), "up", "--state-dir", state,
                       "--bin-dir", args.bin_dir, "--config",
                       os.path.join(ROOT, "examples", "local-cluster.yaml")]
        self.env = dict(os.environ, **FAST_NODES)

    def up(self):
        return subprocess.run(self.up_cmd, env=self.env, capture_output=True, text=True)

    def down(self):
        subprocess.run([os.path.join(self.args.bin_dir, "sluice"), "down", "--state-dir",
                        self.state], capture_output=True)

    def kubectl(self, *argv, check=False):
        r = subprocess.run([self.args.kubectl, "--kubeconfig", self.kubeconfig, *argv],
                           capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(argv)}: {r.stderr.strip()}")
        return r

    def get(self, what, ns):
        """`kubectl get WHAT -o json` in `ns`, parsed; None when it fails."""
        r = self.kubectl("get", *what.split(), "-n", ns, "-o", "json")
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def pods(self, ns, selector):
        """Live pods (not being deleted) with this selector: [(name, uid, node, ready, restarts,
        pid)]; None when the API server does not answer."""
        got = self.get(f"pods -l {selector}", ns)
        if got is None:
            return None
        out = []
        for p in got.get("items", []):
            meta, status = p["metadata"], p.get("status", {})
            if "deletionTimestamp" in meta:
                continue
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in status.get("conditions", []))
            cs = (status.get("containerStatuses") or [{}])[0]
            cid = cs.get("containerID", "")
            pid = int(cid[len("sluice://"):]) if cid.startswith("sluice://") else 0
            out.append((meta["name"], meta["uid"], p.get("spec", {}).get("nodeName", ""), ready,
                        cs.get("restartCount", 0), pid))
        return out

    def dataflow_status(self, ns):
        """The Dataflow's GET /v1/status, resolved through the cluster's hosts file with its
        token, over TLS verified by the CA in its ConfigMap <df>-ca (the chain only: the pod is
        reached by its IP); None when it cannot be read now."""
        secret = self.get(f"secret {DATAFLOW}-token", ns)
        ca = self.get(f"configmap {DATAFLOW}-ca", ns)
        if secret is None or ca is None:
            return None
        context = ssl.create_default_context(cadata=ca["data"]["ca.crt"])
        context.check_hostname = False
        token = base64.b64decode(secret["data"]["token"]).decode()
        host = f"{DATAFLOW}.{ns}.svc"
        ip = None
        try:
            with open(os.path.join(self.state, "node", "hosts")) as f:
                for line in f:
                    fields = line.split()
                    if len(fields) >= 2 and host in fields[1:]:
                        ip = fields[0]
        except OSError:
            return None
        if ip is None:
            return None
        req = urllib.request.Request(f"https://{ip}:8080/v1/status",
                                     headers={"Authorization": f"Bearer {token}", "Host": host})
        try:
            with urllib.request.urlopen(req, timeout=5, context=context) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None


class Soak:
    def __init__(self, args, cluster):
        self.args, self.c = args, cluster
        self.rng = random.Random(args.seed)
        self.kills = {k: 0 for k in KINDS}
        self.skipped = {k: 0 for k in KINDS}
        self.recoveries = {k: [] for k in KINDS}
        self.unrecovered = []
        self.lost = 0
        self.duplicated = 0
        self.violations = []
        self.experiments = []
        self.last_version = 0
        self.last_step = 0
        self.order = []

    def next_kind(self):
        """Every kind once, in a seeded random order, then again."""
        if not self.order:
            self.order = list(self.args.kinds)
            if not self.args.in_order:
                self.rng.shuffle(self.order)
            self.order.reverse()  # pop() takes from the end.
        return self.order.pop()

    def log(self, msg):
        print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)

    # --- invariants -------------------------------------------------------------------------
    def check(self, ns):
        job = self.c.get(f"trainerjob {EXAMPLE}", ns)
        if job is not None:
            v = job.get("status", {}).get("version", 0)
            if job.get("status", {}).get("phase") == "Running":
                self.last_step = job["status"].get("step", 0)
            if v < self.last_version:
                self.violations.append(f"{ns}: version went down from {self.last_version} to {v}")
            self.last_version = max(self.last_version, v)
        st = self.c.dataflow_status(ns)
        if st is None or POLICY not in st.get("policies", {}):
            return st
        p = st["policies"][POLICY]
        gap = p["accepted_groups"] - (p["acked_groups"] + p["unacked_groups"] +
                                      p["stale_dropped_groups"] + p["buffered_groups"])
        if gap != 0:
            self.violations.append(f"{ns}: {gap} accepted groups in no bucket: {json.dumps(p)}")
            self.lost += max(gap, 0) * st.get("group_size", 8)
        if p["served_groups"] != p["acked_groups"] + p["unacked_groups"]:
            self.violations.append(f"{ns}: served groups != acked + unacked: {json.dumps(p)}")
        return st

    def wait(self, ns, pred, timeout=RECOVERY_TIMEOUT):
        """Polls `pred` (and the invariants) every second until it holds; the seconds it took,
        or None on timeout."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                if pred():
                    return time.monotonic() - t0
            except (RuntimeError, subprocess.TimeoutExpired, KeyError, ValueError):
                pass
            self.check(ns)
            time.sleep(1)
        return None

    # --- faults -----------------------------------------------------------------------------
    def inject(self, kind, ns):
        """Injects one fault of `kind`; returns a predicate that holds once it has recovered,
        or None when the fault cannot be injected now."""
        c = self.c
        replicas = c.pods(ns, f"sluice.dev/pool={POOL}") or []
        if kind == "replica":
            if not replicas:
                return None
            name, uid = self.rng.choice(replicas)[:2]
            c.kubectl("delete", "pod", name, "-n", ns, "--wait=false", check=True)
            want = len(replicas)
            return lambda: (lambda now: now is not None and len(now) == want and
                            all(r[3] for r in now) and uid not in [r[1] for r in now])(
                                c.pods(ns, f"sluice.dev/pool={POOL}"))
        if kind == "dataflow":
            df = c.pods(ns, "app.kubernetes.io/component=dataflow") or []
            if len(df) != 1 or df[0][5] <= 1:
                return None
            restarts = df[0][4]
            os.kill(df[0][5], signal.SIGKILL)
            return lambda: (lambda now: now is not None and len(now) == 1 and now[0][3] and
                            now[0][4] > restarts)(c.pods(ns, "app.kubernetes.io/component=dataflow"))
        if kind == "trainer-rank":
            ranks = c.pods(ns, "app.kubernetes.io/component=trainer") or []
            job = c.get(f"trainerjob {EXAMPLE}", ns)
            if len(ranks) != 2 or job is None or any(r[5] <= 1 for r in ranks):
                return None
            restarts = job.get("status", {}).get("restarts", 0)
            os.kill(self.rng.choice(ranks)[5], signal.SIGKILL)

            def gang_back():
                j = c.get(f"trainerjob {EXAMPLE}", ns)
                if j is None:
                    return False
                if j.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    return True
                now = c.pods(ns, "app.kubernetes.io/component=trainer") or []
                return (j["status"].get("restarts", 0) > restarts and len(now) == 2 and
                        all(r[3] for r in now))
            return gang_back
        if kind == "node":
            busy = {r[2] for r in (c.pods(ns, "app.kubernetes.io/component=dataflow") or [])}
            busy |= {r[2] for r in (c.pods(ns, "app.kubernetes.io/component=trainer") or [])}
            nodes = sorted({r[2] for r in replicas} - busy)
            if not nodes:
                return None
            node = self.rng.choice(nodes)
            want = len(replicas)
            sluice = os.path.join(self.args.bin_dir, "sluice")
            subprocess.run([sluice, "node", "fail", node, "--state-dir", c.state], check=True,
                           capture_output=True)

            def recover_node():
                subprocess.run([sluice, "node", "recover", node, "--state-dir", c.state],
                               check=True, capture_output=True)

            def whole_again():
                now = c.pods(ns, f"sluice.dev/pool={POOL}")
                if now is None or len(now) != want or not all(r[3] and r[2] != node for r in now):
                    return False
                recover_node()
                return True
            # Run when the pool never became whole: a node left failed would starve every later
            # experiment of its region (one did, when a node fault met the end of a run).
            whole_again.cleanup = recover_node
            return whole_again
        if kind == "control-plane":
            for comp in ("apiserver", "operator"):
                with open(os.path.join(c.state, "run", f"{comp}.pid")) as f:
                    os.kill(int(f.read().strip()), signal.SIGKILL)
            time.sleep(0.5)
            return lambda: c.up().returncode == 0
        raise ValueError(kind)

    def diagnose(self, ns, kind):
        """Writes what a person needs to see why a fault did not recover (or was slow); returns
        the path."""
        c = self.c
        path = os.path.join(self.args.work, f"diagnostics-{ns}-{kind}.txt")
        with open(path, "w") as f:
            for argv in (["get", "pods", "-n", ns, "-o", "wide"],
                         ["get", "events", "-n", ns, "--sort-by=.lastTimestamp"],
                         ["get", "rolloutpool", POOL, "-n", ns, "-o", "yaml"],
                         ["get", "trainerjob", EXAMPLE, "-n", ns, "-o", "yaml"]):
                f.write(f"--- kubectl {' '.join(argv)}\n{c.kubectl(*argv).stdout}\n")
            for pod in c.pods(ns, "app.kubernetes.io/managed-by=sluice-operator") or []:
                f.write(f"--- logs of {pod[0]}\n")
                f.write(c.kubectl("logs", pod[0], "-n", ns, "--tail=40").stdout + "\n")
            try:
                with open(os.path.join(c.state, "logs", "operator.log")) as log:
                    f.write("--- operator log\n" + "".join(log.readlines()[-60:]))
            except OSError:
                pass
        return path

    # --- one experiment ---------------------------------------------------------------------
    def experiment(self, index, deadline):
        ns = f"soak-{index}"
        c = self.c
        c.kubectl("create", "namespace", ns, check=True)
        path = os.path.join(self.args.work, f"{ns}.yaml")
        with open(path, "w") as f:
            f.write(manifest(self.args.steps))
        self.last_version = 0
        self.last_step = 0
        self.log(f"experiment {index}: namespace {ns}, {self.args.steps} RL steps")
        run = subprocess.Popen(
            [os.path.join(self.args.bin_dir, "sluice"), "run", path, "-n", ns, "--state-dir",
             c.state, "--interval", "5", "--timeout", str(self.args.experiment_timeout),
             "--eval-wait", "180"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        next_fault = time.monotonic() + 15 + self.rng.expovariate(1.0 / self.args.fault_every)
        while run.poll() is None:
            self.check(ns)
            time.sleep(2)
            # No fault once the run is about to end: a replica re-created after the trainer has
            # gone loads the final version only from a ready peer, and a node fault can take both
            # replicas (docs/reliability.md, "Not covered yet").
            if (time.monotonic() < next_fault or time.monotonic() > deadline or
                    self.last_step >= self.args.steps - 15):
                continue
            kind = self.next_kind()
            try:
                recovered = self.inject(kind, ns)
            except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
                self.log(f"  {kind}: could not inject ({e})")
                recovered = None
            if recovered is None:
                self.skipped[kind] += 1
            else:
                self.kills[kind] += 1
                self.log(f"  fault: {kind} at version {self.last_version}")
                took = self.wait(ns, recovered)
                if took is None:
                    self.unrecovered.append(f"{ns}: {kind}")
                    self.log(f"  {kind} did not recover within {RECOVERY_TIMEOUT} s; "
                             f"diagnostics in {self.diagnose(ns, kind)}")
                    cleanup = getattr(recovered, "cleanup", None)
                    if cleanup is not None:
                        try:
                            cleanup()
                        except (OSError, subprocess.CalledProcessError) as e:
                            self.log(f"  {kind}: cleanup failed ({e})")
                else:
                    self.recoveries[kind].append(took)
                    self.log(f"  {kind} recovered in {took:.1f} s")
                    if took > SLOW_RECOVERY:
                        self.log(f"  {kind} was slow; diagnostics in {self.diagnose(ns, kind)}")
            next_fault = time.monotonic() + max(5.0, self.rng.expovariate(1.0 / self.args.fault_every))
        output = run.stdout.read()
        result = {"namespace": ns, "exit": run.returncode}
        job = c.get(f"trainerjob {EXAMPLE}", ns) or {}
        result["phase"] = job.get("status", {}).get("phase")
        result["restarts"] = job.get("status", {}).get("restarts")
        m = re.search(r"eval accuracy: before ([0-9.]+)% -> after ([0-9.]+)%", output)
        if m:
            result["accuracy_before"], result["accuracy_after"] = float(m[1]), float(m[2])
        st = None
        for _ in range(30):  # The dataflow may be recovering from the last fault.
            st = self.check(ns)
            if st is not None and POLICY in st.get("policies", {}):
                break
            time.sleep(2)
        if run.returncode != 0 or result["phase"] != "Succeeded" or st is None:
            self.violations.append(f"{ns}: the run failed (exit {run.returncode}, phase "
                                   f"{result['phase']}):\n{output[-3000:]}")
        else:
            p = st["policies"][POLICY]
            df = self.c.get(f"dataflow {DATAFLOW}", ns) or {}
            gpb = df.get("spec", {}).get("batch", {}).get("groupsPerBatch", 16)
            size = df.get("spec", {}).get("sampling", {}).get("groupSize", 8)
            extra = p["acked_batches"] - self.args.steps
            if extra > 0:
                self.duplicated += extra * gpb * size
                self.violations.append(f"{ns}: {extra} batches acknowledged beyond the steps")
            elif extra < 0 or p["acked_groups"] != self.args.steps * gpb:
                self.lost += abs(self.args.steps * gpb - p["acked_groups"]) * size
                self.violations.append(f"{ns}: {p['acked_batches']} batches acknowledged for "
                                       f"{self.args.steps} steps")
            if p.get("replayed_groups", 0) != 0:
                self.violations.append(f"{ns}: {p['replayed_groups']} groups replayed")
            result["acked_batches"] = p["acked_batches"]
        self.experiments.append(result)
        self.log(f"experiment {index}: {json.dumps(result)}")
        c.kubectl("delete", "namespace", ns, "--wait=false")

    def report(self, minutes):
        def stats(xs):
            return {"count": len(xs), "p50_seconds": round(statistics.median(xs), 1) if xs else None,
                    "max_seconds": round(max(xs), 1) if xs else None}
        return {
            "minutes": round(minutes, 1), "seed": self.args.seed, "steps": self.args.steps,
            "kills": self.kills, "skipped": self.skipped,
            "recoveries": {k: stats(v) for k, v in self.recoveries.items()},
            "unrecovered": self.unrecovered, "lost_trajectories": self.lost,
            "duplicated_trajectories": self.duplicated, "experiments": self.experiments,
            "violations": self.violations,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30, help="how long to soak (default 30)")
    ap.add_argument("--seed", type=int, default=1, help="the fault schedule's seed")
    ap.add_argument("--steps", type=int, default=150, help="RL steps per experiment")
    ap.add_argument("--fault-every", type=float, default=20, help="mean seconds between faults")
    ap.add_argument("--experiment-timeout", type=int, default=900)
    ap.add_argument("--kinds", default=",".join(KINDS),
                    help="the fault kinds to inject, comma-separated (default: all)")
    ap.add_argument("--in-order", action="store_true",
                    help="inject --kinds in the order given instead of a seeded shuffle")
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--kubectl", default="kubectl")
    ap.add_argument("--report", help="write the JSON report here")
    ap.add_argument("--keep", action="store_true", help="leave the cluster and its state")
    args = ap.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in args.kinds if k not in KINDS]
    if unknown or not args.kinds:
        sys.exit(f"chaos-soak: --kinds: unknown {unknown}; the kinds are {', '.join(KINDS)}")
    for b in ("sluice", "sluice-apiserver", "sluice-node", "sluice-operator", "sluice-dataflow",
              "sluice-rollout", "sluice-trainer"):
        if not os.access(os.path.join(args.bin_dir, b), os.X_OK):
            sys.exit(f"chaos-soak: {b} is not built in {args.bin_dir}")
    args.work = tempfile.mkdtemp(prefix="sluice-soak-")
    cluster = Cluster(args, os.path.join(args.work, "state"))
    up = cluster.up()
    if up.returncode != 0:
        sys.exit(f"chaos-soak: sluice up failed:\n{up.stdout}{up.stderr}")
    soak = Soak(args, cluster)
    start = time.monotonic()
    deadline = start + args.minutes * 60
    try:
        index = 1
        soak.experiment(index, deadline)
        # Another experiment only when it can mostly run before the deadline.
        while time.monotonic() < deadline - 90:
            index += 1
            soak.experiment(index, deadline)
    finally:
        report = soak.report((time.monotonic() - start) / 60)
        if not args.keep:
            cluster.down()
    print("\n== chaos soak: {:.1f} min, seed {}, {} experiments".format(
        report["minutes"], args.seed, len(report["experiments"])))
    print("{:<14} {:>6} {:>8} {:>10} {:>10}".format("fault", "kills", "skipped", "p50 (s)",
                                                    "max (s)"))
    for k in KINDS:
        r = report["recoveries"][k]
        print("{:<14} {:>6} {:>8} {:>10} {:>10}".format(
            k, report["kills"][k], report["skipped"][k], r["p50_seconds"] or "-",
            r["max_seconds"] or "-"))
    print(f"not recovered: {len(report['unrecovered'])}")
    print(f"lost trajectories: {report['lost_trajectories']}")
    print(f"duplicated trajectories: {report['duplicated_trajectories']}")
    for e in report["experiments"]:
        acc = (f"{e['accuracy_before']}% -> {e['accuracy_after']}%"
               if "accuracy_after" in e else "-")
        print(f"{e['namespace']}: {e['phase']}, gang restarts {e['restarts']}, accuracy {acc}")
    for v in report["violations"]:
        print(f"VIOLATION: {v}")
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=2)
    ok = not report["violations"] and not report["unrecovered"]
    print("chaos soak: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
